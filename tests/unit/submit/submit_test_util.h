// Shared fixture for the submit-file tests: a scratch directory with an executable and data files.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/files.h"
#include "submit/expr_util.h"
#include "submit/quoting.h"
#include "submit/submit_file.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::submit {

class SubmitTest : public ::testing::Test {
 public:
  // The value of `name` in proc `proc`'s full ad, or "<unset>".
  static std::string Get(const ParsedCluster& c, std::string_view name, size_t proc = 0) {
    if (proc >= c.procs.size()) return "<no such proc>";
    auto attrs = ProcAttrs(c, proc);
    const std::string* v = FindAttr(attrs, name);
    return v != nullptr ? *v : "<unset>";
  }

  // What the job gets as argv[1..]: Args (old syntax) or Arguments (new), as the agent reads them.
  static std::vector<std::string> JobArgs(const ParsedCluster& c, size_t proc = 0) {
    auto attrs = ProcAttrs(c, proc);
    if (const std::string* v1 = FindAttr(attrs, "Args")) {
      return SplitArgumentsV1Raw(StringLiteral(*v1).value_or("<not a string>"));
    }
    const std::string* v2 = FindAttr(attrs, "Arguments");
    if (v2 == nullptr) return {"<unset>"};
    auto args = SplitArgumentsV2(StringLiteral(*v2).value_or("'"));
    return args ? *args : std::vector<std::string>{"<bad V2>"};
  }

 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    Write("prog", "#!/bin/sh\nexit 0\n", 0755);
    Write("data.txt", "hello\n", 0644);
    ASSERT_TRUE(MakeDirs(dir_ + "/subdir"));
    options_.cluster_id = 42;
    options_.owner = "alice";
    options_.cwd = dir_;
    options_.arch = "X86_64";
    options_.opsys = "LINUX";
    options_.filesystem_domain = "submit.example.org";
    options_.submit_time = 1767225600;  // 2026-01-01 00:00:00 UTC
  }

  void Write(const std::string& name, std::string_view text, mode_t mode = 0644) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/" + name, text, mode));
  }

  // Parses `text` as the file "job.sub" in the scratch directory.
  Result<ParsedCluster> Parse(std::string_view text) {
    return ParseSubmitText(text, "job.sub", options_);
  }

  ParsedCluster MustParse(std::string_view text) {
    auto got = Parse(text);
    EXPECT_TRUE(got) << (got ? "" : got.error().message()) << "\n--- input ---\n" << text;
    return got ? std::move(*got) : ParsedCluster{};
  }

  // The error message of a file that must fail, "" (and a test failure) when it parses.
  std::string ErrorOf(std::string_view text) {
    auto got = Parse(text);
    EXPECT_FALSE(got) << "parsed but should not:\n" << text;
    if (got) return "";
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidInput) << got.error().message();
    return got.error().message();
  }

  static bool InCommon(const ParsedCluster& c, std::string_view name) {
    return FindAttr(c.common, name) != nullptr;
  }
  // Replaces "{dir}" by the scratch directory.
  std::string D(std::string s) const {
    for (auto p = s.find("{dir}"); p != std::string::npos; p = s.find("{dir}")) {
      s.replace(p, 5, dir_);
    }
    return s;
  }

  kite::testing::TempDir tmp_{"submit"};
  std::string dir_;  // tmp_'s path
  SubmitOptions options_;
};

}  // namespace kite::submit
