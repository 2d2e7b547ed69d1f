// Conformance with HTCondor's condor_submit: HTCondor's own -dry-run regression test
// (cmd_submit_regress_dry.subs / .expect, 53 submit files with the attributes condor_submit
// produced) and the submit files of HTCondor's user manual, run through Kite's parser.
//
// Each regression file is written as NNN<name> into a scratch directory holding the files
// HTCondor's test creates, parsed with cluster id N and condor_submit's file checks, and every
// line of its .expect section is checked against the job ads Kite produces. A file either agrees
// (every line holds), is refused with a message naming the command Kite does not support, or
// disagrees. Files that do not agree are listed below with the reason; they count against the
// figure all the same. The data lives outside the repository (../shared/conformance, or
// $KITE_CONFORMANCE_DIR); without it the tests skip.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "classad/expr.h"
#include "common/files.h"
#include "common/strings.h"
#include "submit/commands.h"
#include "submit/expr_util.h"
#include "submit/submit_file.h"
#include "tests/fixtures/temp_dir.h"

#ifndef KITE_CONFORMANCE_DIR
#define KITE_CONFORMANCE_DIR ""
#endif

namespace kite::submit {
namespace {

// Regression files Kite does not take as condor_submit does, and why. Each still counts against
// the agreement figure; one that starts agreeing must leave the list (the test fails otherwise).
const std::map<std::string, std::string> kKnownDifferences = {
    {"docker.sub", "refused: universe = docker (Kite does not run containers)"},
    {"docker-noexe.sub", "refused: universe = docker (Kite does not run containers)"},
    {"docker-entrypoint.sub", "refused: universe = docker (Kite does not run containers)"},
    {"parallel.sub", "refused: universe = parallel (Kite runs vanilla, local and grid jobs)"},
    {"kvm.sub", "refused: universe = vm (Kite runs vanilla, local and grid jobs)"},
};

std::string DataDir() {
  const char* env = std::getenv("KITE_CONFORMANCE_DIR");
  return env != nullptr && *env != '\0' ? env : KITE_CONFORMANCE_DIR;
}

// "==NAME" headed sections of a .subs or .expect file, in order.
struct Section {
  std::string name;
  std::string kind;  // "" for ==, "warn" for =warn=, "not" for =!=
  std::vector<std::string> lines;
};

std::vector<Section> SplitSections(const std::string& text) {
  std::vector<Section> out;
  for (const auto& raw : Split(text, '\n', false)) {
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("==")) {
      out.push_back({line.substr(2), "", {}});
    } else if (line.starts_with("=warn=")) {
      out.push_back({line.substr(6), "warn", {}});
    } else if (line.starts_with("=!=")) {
      out.push_back({line.substr(3), "not", {}});
    } else if (!out.empty()) {
      out.back().lines.push_back(line);
    }
  }
  return out;
}

// A value as condor_submit -dry-run prints it: strings in double quotes with only \ and "
// escaped, expressions with HTCondor's spacing (no blank after the commas of calls and lists).
std::string CondorPrint(const std::string& expr) {
  if (auto s = StringLiteral(expr)) {
    std::string out = "\"";
    for (char c : *s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
  std::string text = CanonicalExpr(expr), out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) in_string = !in_string;
    out += c;
    if (!in_string && c == ',' && i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}

bool SameExpr(const std::string& kite, const std::string& condor) {
  auto a = classad::ParseExpr(kite);
  auto b = classad::ParseExpr(condor);
  if (a && b) return classad::Unparse(**a) == classad::Unparse(**b);
  return CondorPrint(kite) == condor;
}

// Checks one .expect line against `attrs` (the proc's full ad); "" when it holds.
std::string CheckLine(const std::vector<Attr>& attrs, const std::string& line) {
  auto eq = line.find('=');
  std::string name = line.substr(0, eq), want = line.substr(eq + 1);
  const std::string* got = FindAttr(attrs, name);
  if (want == "undefined") {
    return got == nullptr ? "" : name + " is " + *got + ", want it absent";
  }
  if (got == nullptr) return name + " is missing, want " + want;
  if (want.size() >= 2 && want.front() == '/' && want.back() == '/') {
    std::string printed = CondorPrint(*got);
    std::regex re(want.substr(1, want.size() - 2));
    return std::regex_search(printed, re) ? "" : name + " is " + printed + ", want " + want;
  }
  return SameExpr(*got, want) ? "" : name + " is " + CondorPrint(*got) + ", want " + want;
}

enum class Outcome { kAgrees, kRefused, kDiffers };

struct FileResult {
  std::string file;
  Outcome outcome = Outcome::kAgrees;
  std::vector<std::string> problems;  // differing lines, or the refusal / error message
};

// True when `message` ("file:line: CMD ... is not supported by Kite (...)") names a command.
bool RefusesNamingACommand(const std::string& message) {
  auto pos = message.find(": ");
  if (pos == std::string::npos || message.find("not supported by Kite") == std::string::npos) {
    return false;
  }
  std::string rest = message.substr(pos + 2);
  std::string word = rest.substr(0, rest.find_first_of(" ="));
  return FindCommand(word) != nullptr;
}

class ConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = DataDir();
    if (data_.empty() || !FileExists(data_ + "/submit/cmd_submit_regress_dry.subs")) {
      GTEST_SKIP() << "HTCondor conformance data not found (set KITE_CONFORMANCE_DIR or the "
                      "CMake cache variable KITE_CONFORMANCE_DIR; looked in '"
                   << data_ << "')";
    }
    dir_ = tmp_.path();
    // What HTCondor's test creates beside the submit files.
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/basic.cmd", "#!/bin/sh\necho $*\n", 0755));
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/cmd_true.cmd", "#!/bin/true\n", 0755));
    for (const char* d : {"70", "216", "240"}) {
      ASSERT_TRUE(MakeDirs(dir_ + "/Multilevel_Thesis_WheatData/" + d));
    }
  }

  SubmitOptions Options(long cluster) const {
    SubmitOptions o;
    o.cluster_id = cluster;
    o.owner = "kite";
    o.cwd = dir_;
    o.file_checks = FileChecks::kCondor;
    o.arch = "X86_64";
    o.opsys = "LINUX";
    o.filesystem_domain = "submit.example.org";
    o.submit_time = 1767225600;  // 2026-01-01
    o.random = [] { return 4u; };
    return o;
  }

  FileResult RunOne(const Section& sub, long number, const Section* expect, const Section* warn);

  kite::testing::TempDir tmp_{"conformance"};
  std::string data_, dir_;  // dir_: tmp_'s path
};

FileResult ConformanceTest::RunOne(const Section& sub, long number, const Section* expect,
                                   const Section* warn) {
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%03ld", number);
  FileResult r{sub.name};
  std::string name = prefix + sub.name, text;
  for (const auto& l : sub.lines) text += l + "\n";
  (void)WriteFileAtomic(dir_ + "/" + name, text, 0644);
  auto c = ParseSubmitText(text, name, Options(number));
  if (!c) {
    r.outcome = RefusesNamingACommand(c.error().message()) ? Outcome::kRefused : Outcome::kDiffers;
    r.problems.push_back(c.error().message());
    return r;
  }
  size_t proc = 0;
  for (const auto& line : expect ? expect->lines : std::vector<std::string>{}) {
    std::string t(Trim(line));
    if (t.empty() || t[0] == '#') continue;
    if (t == ".") {
      ++proc;
      continue;
    }
    if (t.find('=') == std::string::npos) continue;  // a comment line
    if (proc >= c->procs.size()) {
      r.problems.push_back("no proc " + std::to_string(proc) + " for " + t);
      continue;
    }
    if (auto p = CheckLine(ProcAttrs(*c, proc), t); !p.empty()) {
      r.problems.push_back("proc " + std::to_string(proc) + ": " + p);
    }
  }
  for (const auto& line : warn ? warn->lines : std::vector<std::string>{}) {
    std::string want(Trim(line));
    if (want.starts_with("WARNING: ")) want = want.substr(9);
    if (want.empty()) continue;
    bool found = false;
    for (const auto& w : c->warnings) found = found || w.find(want) != std::string::npos;
    if (!found) r.problems.push_back("no warning '" + want + "'");
  }
  if (!r.problems.empty()) r.outcome = Outcome::kDiffers;
  return r;
}

TEST_F(ConformanceTest, RegressionFilesAgreeWithCondorSubmit) {
  auto subs = ReadFile(data_ + "/submit/cmd_submit_regress_dry.subs");
  auto expect = ReadFile(data_ + "/submit/cmd_submit_regress_dry.expect");
  ASSERT_TRUE(subs && expect);
  auto files = SplitSections(*subs);
  auto sections = SplitSections(*expect);
  auto find = [&](const std::string& name, const std::string& kind) -> const Section* {
    for (const auto& s : sections) {
      if (s.name == name && s.kind == kind) return &s;
    }
    return nullptr;
  };
  std::vector<FileResult> results;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    results.push_back(RunOne(f, static_cast<long>(i + 1), find(f.name, ""), find(f.name, "warn")));
  }
  int agree = 0, refused = 0, differ = 0;
  const char* kWord[] = {"agrees ", "refused", "DIFFERS"};
  for (const auto& r : results) {
    (r.outcome == Outcome::kAgrees ? agree : r.outcome == Outcome::kRefused ? refused : differ)++;
    std::printf("  %s  %s\n", kWord[static_cast<int>(r.outcome)], r.file.c_str());
    for (const auto& p : r.problems) std::printf("             %s\n", p.c_str());
    auto known = kKnownDifferences.find(r.file);
    if (r.outcome == Outcome::kAgrees) {
      EXPECT_EQ(known, kKnownDifferences.end())
          << r.file << " agrees now: take it off the known differences";
    } else {
      EXPECT_NE(known, kKnownDifferences.end())
          << r.file << " does not agree and is not a known difference";
      if (known != kKnownDifferences.end())
        std::printf("             known: %s\n", known->second.c_str());
    }
    EXPECT_NE(r.outcome, Outcome::kDiffers) << r.file
                                            << " produces other attributes than "
                                               "condor_submit and is not refused";
  }
  double percent = 100.0 * agree / static_cast<double>(results.size());
  std::printf(
      "submit conformance: %d of %zu regression files agree with condor_submit (%.1f%%), "
      "%d refused naming the command, %d disagree\n",
      agree, results.size(), percent, refused, differ);
  EXPECT_EQ(results.size(), 53u);
  EXPECT_GE(percent, 90.0);
}

// The manual's submit files: each is accepted, or refused naming the command Kite does not run.
TEST_F(ConformanceTest, ManualFilesAreAcceptedOrRefusedOnPurpose) {
  auto index = ReadFile(data_ + "/submit/manual/index.json");
  ASSERT_TRUE(index);
  auto entries = boost::json::parse(*index).as_array();
  int accepted = 0, refused = 0;
  for (const auto& e : entries) {
    std::string file(e.at("file").as_string());
    bool fragment = e.at("fragment").as_bool();
    auto text = ReadFile(data_ + "/submit/manual/" + file);
    ASSERT_TRUE(text) << file;
    std::string body = (fragment ? "executable = /bin/echo\n" : "") + *text;
    SubmitOptions o = Options(1);
    o.file_checks = FileChecks::kNone;  // the manual names programs and inputs that do not exist
    auto c = ParseSubmitText(body, data_ + "/submit/manual/" + file, o);
    if (c) {
      ++accepted;
      std::printf("  accepted  %s (%zu jobs)\n", file.c_str(), c->procs.size());
      continue;
    }
    bool on_purpose = RefusesNamingACommand(c.error().message());
    refused += on_purpose ? 1 : 0;
    std::printf("  %s  %s: %s\n", on_purpose ? "refused " : "FAILED  ", file.c_str(),
                c.error().message().c_str());
    EXPECT_TRUE(on_purpose) << file << ": " << c.error().message();
  }
  std::printf("submit manual: %d of %zu accepted, %d refused naming the command\n", accepted,
              entries.size(), refused);
  EXPECT_EQ(accepted + refused, static_cast<int>(entries.size()));
}

}  // namespace
}  // namespace kite::submit
