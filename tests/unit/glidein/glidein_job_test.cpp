// The glide-in grid job's description: durations, the bootstrap's arguments, the submit text
// read back through the real submit parser, and `kite glidein q`'s table.
#include "glidein/glidein_job.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>

#include "glidein/options.h"
#include "submit/quoting.h"
#include "submit/submit_file.h"

namespace kite::glidein {
namespace {

const std::string kStartdSha(64, 'a');
const std::string kExecSha(64, 'b');
const std::string kStarterSha(64, 'c');

GlideinRequest Request() {
  GlideinRequest r;
  r.resource = "kite 127.0.0.1:9618/slurm";
  r.count = 3;
  r.cpus = 2;
  r.memory_mib = 2048;
  r.lifetime = 7200;
  r.idle_timeout = 15;
  // Everything a submit line or an argument list could trip over: quotes of both kinds, blanks,
  // a "$(" that must stay text, a '#'.
  r.start = "TARGET.Owner == \"jane's\" && regexp(\"^a$(b) #c\", TARGET.Cmd)";
  r.policy = {.suspend = "LoadAvg > 1.5 && Activity == \"Busy\"",
              .cont = "LoadAvg < 0.5",
              .preempt = "time() - EnteredCurrentActivity > 3600",
              .kill = "true",
              .retirement = "TARGET.RequestCpus * 60"};
  return r;
}

GlideinSetting Setting() {
  GlideinSetting s;
  s.agent = "desk.example.org:9620";
  s.agent_identity = "/O=Grid/CN=Jane Doe (test)";
  s.proxy = "/tmp/x509up_u1000";
  s.bootstrap = "/opt/kite dir/bin/kite-glidein-bootstrap";
  s.startd = "/opt/kite dir/bin/kite-startd";
  s.starter = "/opt/kite dir/bin/kite-starter";
  s.exec = "/opt/kite dir/bin/kite-exec";
  s.startd_sha256 = kStartdSha;
  s.starter_sha256 = kStarterSha;
  s.exec_sha256 = kExecSha;
  s.output_dir = "/home/jane/$weird/.kite/glidein";
  return s;
}

TEST(ParseSecondsTest, Durations) {
  struct Case {
    const char* text;
    double seconds;
  };
  for (Case c : {Case{"90s", 90}, Case{"10m", 600}, Case{"2h", 7200}, Case{"1d", 86400},
                 Case{"3600", 3600}, Case{"0", 0}, Case{"1h30m", 5400}, Case{"2.5", 2.5},
                 Case{" 15s ", 15}, Case{"1.5h", 5400}}) {
    auto s = ParseSeconds(c.text);
    ASSERT_TRUE(s) << c.text << ": " << s.error().ToString();
    EXPECT_DOUBLE_EQ(*s, c.seconds) << c.text;
  }
  for (const char* bad : {"", "h", "-5", "10x", "1h30", "abc", "2 h", "5m-1s", "1e999"}) {
    auto s = ParseSeconds(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(s.error().message().find("is not a duration"), std::string::npos);
  }
}

// With remote I/O's library: staged with the programs, checked by the bootstrap as a library.
TEST(GlideinJobTest, TheRemoteIoLibraryIsStagedAndChecked) {
  GlideinSetting s = Setting();
  s.rsc_lib = "/opt/kite dir/bin/libkite_rsc.so";
  s.rsc_lib_sha256 = kExecSha;
  auto args = BootstrapArguments(Request(), s, "glidein-7.1", "7.1.credential");
  auto dashes = std::find(args.begin(), args.end(), "--");
  ASSERT_NE(dashes, args.end());
  EXPECT_EQ(std::vector<std::string>(dashes - 2, dashes),
            (std::vector<std::string>{"--lib", "libkite_rsc.so=" + kExecSha}));
  auto text = GlideinSubmitText(Request(), s, 7);
  ASSERT_TRUE(text) << text.error().ToString();
  EXPECT_NE(text->find(",/opt/kite dir/bin/libkite_rsc.so,"), std::string::npos) << *text;
  s.rsc_lib_sha256 = "nothex";
  EXPECT_FALSE(GlideinSubmitText(Request(), s, 7));
}

// With remote I/O's file system server: staged and checked as a program (it answers --version).
TEST(GlideinJobTest, TheRemoteIoServerIsStagedAndCheckedAsAProgram) {
  GlideinSetting s = Setting();
  s.rsc_fuse = "/opt/kite dir/bin/kite-rsc-fuse";
  s.rsc_fuse_sha256 = kStarterSha;
  auto args = BootstrapArguments(Request(), s, "glidein-7.1", "7.1.credential");
  auto dashes = std::find(args.begin(), args.end(), "--");
  ASSERT_NE(dashes, args.end());
  EXPECT_EQ(std::vector<std::string>(dashes - 2, dashes),
            (std::vector<std::string>{"--sha256", "kite-rsc-fuse=" + kStarterSha}));
  auto text = GlideinSubmitText(Request(), s, 7);
  ASSERT_TRUE(text) << text.error().ToString();
  EXPECT_NE(text->find(",/opt/kite dir/bin/kite-rsc-fuse,"), std::string::npos) << *text;
  s.rsc_fuse = "relative/kite-rsc-fuse";
  EXPECT_FALSE(GlideinSubmitText(Request(), s, 7));
}

TEST(GlideinJobTest, StartdNameNamesTheJob) {
  EXPECT_EQ(GlideinStartdName(12, 3), "glidein-12.3");
  EXPECT_EQ(GlideinCredentialName(12, 3), "12.3.credential");
}

// The bootstrap's checks, then startd flags that kite-startd reads back into what was asked.
TEST(GlideinJobTest, BootstrapArgumentsCarryTheChecksAndTheStartdOptions) {
  auto args = BootstrapArguments(Request(), Setting(), "glidein-7.1", "7.1.credential");
  ASSERT_GE(args.size(), 7u);
  EXPECT_EQ(std::vector<std::string>(args.begin(), args.begin() + 7),
            (std::vector<std::string>{"--sha256", "kite-startd=" + kStartdSha, "--sha256",
                                      "kite-starter=" + kStarterSha, "--sha256",
                                      "kite-exec=" + kExecSha, "--"}));
  std::vector<std::string> startd(args.begin() + 7, args.end());
  EXPECT_EQ(std::count(startd.begin(), startd.end(), "--work"), 0) << "the bootstrap gives --work";
  auto id = std::find(startd.begin(), startd.end(), "--agent-identity");
  ASSERT_NE(id, startd.end());
  ASSERT_NE(id + 1, startd.end());
  EXPECT_EQ(*(id + 1), "/O=Grid/CN=Jane Doe (test)");
  EXPECT_EQ(std::count(startd.begin(), startd.end(), "--agent-identity"), 1);

  // As kite-startd parses them (the bootstrap adds --work).
  CLI::App app;
  app.allow_extras();  // --agent-identity, until StartdOptions declares it
  StartdOptions o;
  o.AddFlags(app);
  std::vector<std::string> argv = startd;
  argv.insert(argv.begin(), {"--work", "/site/job/execute"});
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  app.parse(argv);
  EXPECT_EQ(o.agent, "tls:desk.example.org:9620");
  EXPECT_EQ(o.name, "glidein-7.1");
  EXPECT_EQ(o.slots, 2);
  EXPECT_EQ(o.cpus_per_slot, 1);
  EXPECT_EQ(o.memory_mib, 2048);
  EXPECT_EQ(o.lifetime, 7200);
  EXPECT_EQ(o.idle_timeout, 15);
  EXPECT_EQ(o.start, Request().start);
  EXPECT_EQ(o.policy, Request().policy);
  EXPECT_EQ(o.resource, "kite 127.0.0.1:9618/slurm");
  EXPECT_EQ(o.work, "/site/job/execute");
  EXPECT_EQ(o.credential, "7.1.credential");
}

// The submit text, read by the same parser `kite submit` uses, gives each glide-in exactly the
// bootstrap arguments, files and requests meant, whatever characters they hold.
TEST(GlideinJobTest, SubmitTextReadsBackThroughTheSubmitParser) {
  auto r = Request();
  auto s = Setting();
  auto text = GlideinSubmitText(r, s, 7);
  ASSERT_TRUE(text) << text.error().ToString();
  submit::SubmitOptions options;
  options.cluster_id = 7;
  options.file_checks = submit::FileChecks::kNone;
  auto parsed = submit::ParseSubmitText(*text, "glidein.sub", options);
  ASSERT_TRUE(parsed) << parsed.error().ToString() << "\n" << *text;
  ASSERT_EQ(parsed->procs.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    classad::ClassAd ad;
    for (const auto& a : submit::ProcAttrs(*parsed, p)) {
      ASSERT_TRUE(ad.InsertText(a.name, a.expr)) << a.name << " = " << a.expr;
    }
    std::string id = "7." + std::to_string(p);
    EXPECT_EQ(ad.EvaluateInt("JobUniverse"), 9);
    EXPECT_EQ(ad.EvaluateString("GridResource"), "kite 127.0.0.1:9618/slurm");
    EXPECT_EQ(ad.EvaluateString("Cmd"), s.bootstrap);
    // Each glide-in takes its own pool credential, named after its job.
    EXPECT_EQ(ad.EvaluateString("TransferInput"), s.startd + "," + s.starter + "," + s.exec + "," +
                                                      s.output_dir + "/" + id + ".credential");
    EXPECT_EQ(ad.EvaluateString("X509UserProxy"), s.proxy);
    EXPECT_EQ(ad.EvaluateBool("KiteGlidein"), true);
    EXPECT_EQ(ad.EvaluateString("GlideinResource"), "kite 127.0.0.1:9618/slurm");
    EXPECT_EQ(ad.EvaluateInt("RequestCpus"), 2);
    EXPECT_EQ(ad.EvaluateInt("RequestMemory"), 2048);
    EXPECT_EQ(ad.EvaluateInt("BatchRuntime"), 7200 + kWalltimeMarginSeconds);
    EXPECT_EQ(ad.EvaluateString("Out"), s.output_dir + "/" + id + ".out");
    EXPECT_EQ(ad.EvaluateString("Err"), s.output_dir + "/" + id + ".err");
    auto raw = ad.EvaluateString("Arguments");
    ASSERT_TRUE(raw);
    auto args = submit::SplitArgumentsV2(*raw);
    ASSERT_TRUE(args) << *raw;
    EXPECT_EQ(*args, BootstrapArguments(r, s, "glidein-" + id, id + ".credential"));
  }
}

TEST(GlideinJobTest, NoLifetimeAsksNoWalltimeAndNoMemoryAsksNone) {
  auto r = Request();
  r.count = 1;
  r.lifetime = 0;
  r.memory_mib = 0;
  auto text = GlideinSubmitText(r, Setting(), 3);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find("batch_runtime"), std::string::npos) << *text;
  EXPECT_EQ(text->find("request_memory"), std::string::npos) << *text;
}

TEST(GlideinJobTest, RefusesWhatCannotBeSubmitted) {
  struct Case {
    const char* what;
    std::function<void(GlideinRequest&, GlideinSetting&)> change;
    const char* says;
  };
  std::vector<Case> cases = {
      {"no resource", [](auto& r, auto&) { r.resource = " "; }, "--resource is required"},
      {"no glide-ins", [](auto& r, auto&) { r.count = 0; }, "--count"},
      {"no cpus", [](auto& r, auto&) { r.cpus = 0; }, "--cpus"},
      {"negative memory", [](auto& r, auto&) { r.memory_mib = -1; }, "--memory"},
      {"negative lifetime", [](auto& r, auto&) { r.lifetime = -1; }, "--lifetime"},
      {"two-line start", [](auto& r, auto&) { r.start = "true\nqueue 100"; }, "one line"},
      {"empty start", [](auto& r, auto&) { r.start = ""; }, "--start"},
      {"start not an expression", [](auto& r, auto&) { r.start = "Owner =="; },
       "--start 'Owner ==' is not a ClassAd expression"},
      {"suspend not an expression", [](auto& r, auto&) { r.policy.suspend = "(("; }, "--suspend"},
      {"two-line preempt", [](auto& r, auto&) { r.policy.preempt = "true\nqueue"; },
       "--preempt must be one line"},
      {"empty kill", [](auto& r, auto&) { r.policy.kill = " "; }, "--kill must not be empty"},
      {"retirement not an expression", [](auto& r, auto&) { r.policy.retirement = "1 +"; },
       "--max-job-retirement-time"},
      {"agent without port", [](auto&, auto& s) { s.agent = "desk"; }, "is not HOST:PORT"},
      {"no identity", [](auto&, auto& s) { s.agent_identity = ""; }, "identity"},
      {"relative program", [](auto&, auto& s) { s.startd = "kite-startd"; }, "absolute path"},
      {"comma in a path", [](auto&, auto& s) { s.exec = "/a,b/kite-exec"; }, "comma"},
      {"bad digest", [](auto&, auto& s) { s.exec_sha256 = "ABC"; }, "SHA-256"},
  };
  for (auto& c : cases) {
    auto r = Request();
    auto s = Setting();
    c.change(r, s);
    auto text = GlideinSubmitText(r, s, 1);
    ASSERT_FALSE(text) << c.what;
    EXPECT_EQ(text.error().code(), ErrorCode::kInvalidInput) << c.what;
    EXPECT_NE(text.error().message().find(c.says), std::string::npos)
        << c.what << ": " << text.error().message();
  }
}

classad::ClassAd Job(int cluster, int proc, int status, const std::string& grid_status) {
  classad::ClassAd ad;
  ad.Assign("ClusterId", cluster);
  ad.Assign("ProcId", proc);
  ad.Assign("JobStatus", status);
  if (!grid_status.empty()) ad.Assign("GridJobStatus", grid_status);
  ad.Assign("GlideinResource", "kite 127.0.0.1:9618/fork");
  return ad;
}

classad::ClassAd Slot(const std::string& startd, const std::string& state) {
  classad::ClassAd ad;
  ad.Assign("StartdName", startd);
  ad.Assign("State", state);
  return ad;
}

TEST(GlideinJobTest, TableShowsEachGlideinWithItsSlots) {
  std::vector<classad::ClassAd> jobs = {Job(7, 0, 2, "active"), Job(7, 1, 1, "")};
  std::vector<classad::ClassAd> slots = {
      Slot("glidein-7.0", "Claimed"), Slot("glidein-7.0", "Unclaimed"),
      Slot("glidein-9.0", "Unclaimed"),  // not one of the jobs listed
      Slot("desk", "Unclaimed")};        // a local slot
  EXPECT_EQ(FormatGlideinTable(jobs, slots, true),
            " ID         STATUS         SLOTS  BUSY  RESOURCE\n"
            "     7.0   ACTIVE             2     1  kite 127.0.0.1:9618/fork\n"
            "     7.1   IDLE               0     0  kite 127.0.0.1:9618/fork\n"
            "\n2 glide-in(s), 2 slot(s), 1 busy\n");
  std::string unknown = FormatGlideinTable(jobs, {}, false);
  EXPECT_NE(unknown.find("     7.0   ACTIVE             -     -  kite"), std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("their slots are not known"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace kite::glidein
