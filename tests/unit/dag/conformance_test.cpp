// HTCondor's own DAG files (../shared/conformance/dagman: 35 DAGMan regression tests and the 43
// examples of the DAGMan manual) read by Kite's parser. A test HTCondor expects to fail because
// its DAG file is wrong (a cycle, an illegal node name, REJECT) must be refused; every other DAG
// file must parse. The manual's examples are fragments: they must parse too, except those that
// name files the manual does not show (listed below with the reason). The run prints the
// agreement; without the data folder the test skips.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "dag/dag.h"

#ifndef KITE_CONFORMANCE_DIR
#define KITE_CONFORMANCE_DIR ""
#endif

namespace kite::dag {
namespace {

namespace fs = std::filesystem;

std::string DataDir() {
  const char* env = std::getenv("KITE_CONFORMANCE_DIR");
  return std::string(env != nullptr && *env != '\0' ? env : KITE_CONFORMANCE_DIR) + "/dagman";
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses `dags` as if run from `dir`, checking the submit files exist.
Result<Dag> ParseIn(const fs::path& dir, const std::vector<std::string>& dags) {
  ParseOptions o;
  o.read = [dir](const std::string& path) -> Result<std::string> {
    fs::path p = dir / path;
    if (!fs::is_regular_file(p)) return Fail(ErrorCode::kNotFound, "cannot read " + path);
    return Slurp(p);
  };
  o.exists = [dir](const std::string& path) { return fs::exists(dir / path); };
  return ParseDag(dags, o);
}

// Tests whose DAG files are wrong on purpose: refused at parse, with these words in the error.
const std::map<std::string, std::string> kRefused = {
    {"job_dagman_cycle-A", "cycle: B -> C -> B"},
    {"job_dagman_node_name_illegal_chars", "'+' is not allowed"},
    {"job_dagman_reject", "REJECT"},
};

// Manual examples that cannot parse alone, and why.
const std::map<std::string, std::string> kManualIncomplete = {
    {"m03-dependencies-multi/dependencies.dag", "PARENT/CHILD lines only: the nodes are not shown"},
    {"m04-dependencies-diamond-split/dependencies.dag", "PARENT/CHILD lines only"},
    {"m05-weak-dependency/weak.dag", "one WEAK PARENT line: the nodes are not shown"},
    {"m07-post-script-return/post.dag", "one SCRIPT line: the node is not shown"},
    {"m16-vars-arguments/example.dag", "VARS lines only: the node is not shown"},
    {"m18-vars-classad-attribute/plus-syntax.dag", "VARS lines only"},
    {"m18-vars-classad-attribute/my-syntax.dag", "VARS lines only"},
    {"m29-save-point-rolling/progressSavefile.dag", "'...' stands for elided lines"},
    {"m34-large-dag-unique-submits/sweep.dag", "'...' stands for elided lines"},
    {"m35-large-dag-shared-submit/sweep.dag", "'...' stands for elided lines"},
    {"m36-splice-dependency/example.dag", "the spliced DAG file is not shown"},
    {"m40-splice-noop-scripts/example.dag", "the spliced DAG file is not shown"},
};

TEST(DagConformance, ParsesDagmansOwnFiles) {
  fs::path root = DataDir();
  if (!fs::exists(root / "tests.json")) GTEST_SKIP() << "no conformance data in " << root;
  auto tests = boost::json::parse(Slurp(root / "tests.json")).as_array();
  int agree = 0, total = 0;
  for (const auto& t : tests) {
    std::string name(t.at("test").as_string());
    std::vector<std::string> dags;
    for (const auto& d : t.at("dags").as_array()) dags.emplace_back(d.as_string());
    auto dag = ParseIn(root / name, dags);
    ++total;
    auto refused = kRefused.find(name);
    bool ok = refused == kRefused.end()
                  ? dag.has_value()
                  : !dag && dag.error().message().find(refused->second) != std::string::npos;
    agree += ok;
    EXPECT_TRUE(ok) << name << ": " << (dag ? "parsed" : dag.error().message());
  }
  std::printf("DAGMan regression tests: %d/%d DAG files read as HTCondor reads them\n", agree,
              total);
  auto examples = boost::json::parse(Slurp(root / "manual/index.json")).as_array();
  int manual_ok = 0, manual_total = 0;
  for (const auto& e : examples) {
    std::string name(e.at("example").as_string());
    for (const auto& f : e.at("files").as_array()) {
      std::string file(f.at("file").as_string());
      if (!file.ends_with(".dag")) continue;
      ++manual_total;
      ParseOptions o;
      fs::path dir = root / "manual" / name;
      o.read = [dir](const std::string& path) -> Result<std::string> {
        if (!fs::is_regular_file(dir / path))
          return Fail(ErrorCode::kNotFound, "cannot read " + path);
        return Slurp(dir / path);
      };
      auto dag = ParseDag({file}, o);
      bool known = kManualIncomplete.contains(name + "/" + file);
      manual_ok += dag.has_value();
      // A listed fragment that parses must leave the list.
      EXPECT_NE(dag.has_value(), known)
          << name << "/" << file << ": " << (dag ? "parses, yet is listed" : dag.error().message());
    }
  }
  std::printf("DAGMan manual examples: %d/%d DAG files parse (%zu are fragments that cannot)\n",
              manual_ok, manual_total, kManualIncomplete.size());
}

}  // namespace
}  // namespace kite::dag
