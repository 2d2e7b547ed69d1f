// What a grid job ad turns into: resource, site description, GASS files, request ids.
#include "gridmanager/grid_job.h"
#include "grid/grid_type.h"
#include "grid/site_link.h"

#include <gtest/gtest.h>

#include "classad/io.h"

namespace kite::gridmanager {
namespace {

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseOldAd(text);
  EXPECT_TRUE(ad) << ad.error().ToString();
  return ad ? std::move(*ad) : classad::ClassAd();
}

const char* kBase =
    "GridResource = \"kite gk.example.org:2119/fork\"\n"
    "x509userproxy = \"/tmp/x509up_u1\"\n"
    "Iwd = \"/home/jane/run\"\n"
    "QDate = 1700000000\nClusterId = 12\nProcId = 3\n";

TEST(ParseGridResource, AcceptsHostPortAndBatch) {
  auto r = ParseGridResource("kite gk.example.org:2119/slurm");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->host, "gk.example.org");
  EXPECT_EQ(r->port, 2119);
  EXPECT_EQ(r->batch, "slurm");
  EXPECT_EQ(r->HostPort(), "gk.example.org:2119");
  auto v6 = ParseGridResource("kite [::1]:9000");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->batch, "");
  EXPECT_EQ(v6->HostPort(), "[::1]:9000");
}

TEST(ParseGridResource, RefusesMalformedWithTheReason) {
  for (const char* bad :
       {"kite host", "kite host:0", "kite host:70000", "kite host:12x", "kite :12", "kite host:12/",
        "kite [::1:12", "kite [::1]12", "kite ho st:12"}) {
    auto r = ParseGridResource(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message().find("expected \"kite HOST:PORT[/BATCH]\""), std::string::npos)
        << r.error().message();
  }
  for (const char* unknown : {"", "nordugrid host:1", "$$(GridResource)"}) {
    auto r = ParseGridResource(unknown);
    ASSERT_FALSE(r) << unknown;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message().find("is not one Kite runs (it runs: kite"), std::string::npos)
        << r.error().message();
  }
}

TEST(ParseGridResource, IsCaseBlindInTheTypeAndRecordsItsRegistryName) {
  auto r = ParseGridResource("  KITE gk.example.org:2119/slurm ");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->type, "kite");
  EXPECT_EQ(r->Text(), "kite gk.example.org:2119/slurm");
  EXPECT_EQ(grid::SiteOf("kite [::1]:9/sge"), "[::1]:9");
  // A resource Kite cannot run is still shown by where it points.
  EXPECT_EQ(grid::SiteOf("nordugrid gk.example.org/jobmanager-slurm"), "gk.example.org");
  // GRAM5 contacts default the port and the service, as HTCondor read them.
  auto g = ParseGridResource("gt5 gk.example.org");
  ASSERT_TRUE(g) << g.error().ToString();
  EXPECT_EQ(g->Text(), "gt5 gk.example.org:2119/jobmanager");
  EXPECT_EQ(grid::SiteJobId("gt5", "https://gk:4/1/2/"), "https://gk:4/1/2/");
  EXPECT_EQ(grid::SiteJobId("kite", "https://gk:4/jobs/j1"), "j1");
  EXPECT_FALSE(ParseGridResource("kite gk:1/sl urm"));
  EXPECT_FALSE(ParseGridResource("kite gk:1/a.b"));
}

// HTCondor's spellings of an ARC CE: a URL, or a host with the port and path left out.
TEST(ParseGridResource, ReadsAnArcCeAsHTCondorDoes) {
  struct Case {
    const char* text;
    const char* host;
    int port;
    const char* path;
  };
  for (const Case& c :
       {Case{"arc https://ce.example.org:8443/arex", "ce.example.org", 8443, "arex"},
        Case{"arc https://ce.example.org/arex/", "ce.example.org", 443, "arex"},
        Case{"ARC ce.example.org", "ce.example.org", 443, "arex"},
        Case{"arc [::1]:9000/a-rex/x", "::1", 9000, "a-rex/x"}}) {
    auto r = ParseGridResource(c.text);
    ASSERT_TRUE(r) << c.text << ": " << r.error().ToString();
    EXPECT_EQ(r->type, "arc");
    EXPECT_EQ(r->host, c.host);
    EXPECT_EQ(r->port, c.port);
    EXPECT_EQ(r->batch, c.path);
    auto again = ParseGridResource(r->Text());  // what the job ad records reads back the same
    ASSERT_TRUE(again) << r->Text();
    EXPECT_EQ(again->Contact(), r->Contact());
    EXPECT_EQ(grid::ArcEndpoint(*r), "https://" + r->HostPort() + "/" + c.path);
  }
  for (const char* bad : {"arc", "arc https://", "arc ce:0/arex", "arc ce/../etc", "arc ce//x",
                          "arc http s://ce", "arc ce/a?b"}) {
    auto r = ParseGridResource(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("expected \"arc [https://]HOST[:PORT][/PATH]\""),
              std::string::npos)
        << r.error().message();
  }
}

// transfer_output_files come back from the types that bring them back, under Iwd by base name or
// where a remap puts them: fetched by ARC's link; sent by a Kite site to GASS (stage_out, each
// writable there as "output/NAME"). (Submit's tests cover a type that does not.)
TEST(PlanGridJob, OutputFilesComeBackFromTypesThatBringThemBack) {
  std::string arc =
      "GridResource = \"arc https://ce.example.org/arex\"\n"
      "x509userproxy = \"/tmp/x509up_u1\"\nIwd = \"/home/jane/run\"\n"
      "Cmd = \"/bin/sh\"\nTransferExecutable = false\n";
  auto plan = PlanGridJob(Ad(arc + "TransferOutput = \"result.dat, sub/table.csv, log.txt\"\n"
                                   "TransferOutputRemaps = \"table.csv = tables/t.$(Process).csv; "
                                   "log.txt = /var/tmp/log.txt\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->results, (std::vector<std::pair<std::string, std::string>>{
                               {"result.dat", "/home/jane/run/result.dat"},
                               {"sub/table.csv", "/home/jane/run/tables/t.$(Process).csv"},
                               {"log.txt", "/var/tmp/log.txt"}}));
  for (const char* bad : {"../x", "/etc/passwd", "/", "gsiftp://h/x", "d, d/"}) {
    auto r = PlanGridJob(Ad(arc + "TransferOutput = \"" + bad + "\"\n"));
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find("TransferOutput"), std::string::npos);
  }
  auto twice = PlanGridJob(Ad(arc + "TransferOutput = \"a/x, b/x\"\n"));
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("two output files"), std::string::npos);
  EXPECT_TRUE(plan->desc.stage_out.empty());  // ARC's link fetches them
  // Folders: "d" becomes Iwd/d; "d/" brings what d holds into Iwd (or where a remap says).
  auto folders = PlanGridJob(Ad(arc + "TransferOutput = \"out/d, a/, b/, c/\"\n"
                                      "TransferOutputRemaps = \"c = elsewhere\"\n"));
  ASSERT_TRUE(folders) << folders.error().ToString();
  EXPECT_EQ(folders->results,
            (std::vector<std::pair<std::string, std::string>>{{"out/d", "/home/jane/run/d"},
                                                              {"a/", "/home/jane/run"},
                                                              {"b/", "/home/jane/run"},
                                                              {"c/", "/home/jane/run/elsewhere"}}));
  auto gt5 =
      PlanGridJob(Ad("GridResource = \"gt5 gk.example.org/jobmanager-fork\"\n"
                     "x509userproxy = \"/tmp/x509up_u1\"\nIwd = \"/home/jane/run\"\n"
                     "Cmd = \"/bin/sh\"\nTransferExecutable = false\n"
                     "TransferOutput = \"r.dat, d/\"\n"));
  ASSERT_FALSE(gt5);
  EXPECT_NE(gt5.error().message().find("sends back files, not folders ('d/')"), std::string::npos)
      << gt5.error().ToString();
  auto kite =
      PlanGridJob(Ad(std::string(kBase) + "Cmd = \"p\"\nIwd = \"/home/jane/run\"\n"
                                          "TransferOutput = \"r.dat, sub/t.csv, d/\"\n"
                                          "TransferOutputRemaps = \"t.csv = tables/t.csv\"\n"));
  ASSERT_TRUE(kite) << kite.error().ToString();
  EXPECT_EQ(kite->desc.stage_out, (std::vector<gram::StageFile>{{"output/r.dat", "r.dat"},
                                                                {"output/sub/t.csv", "sub/t.csv"},
                                                                {"output/d", "d", true}}));
  for (const auto& w : kite->writable) {  // any of them may be a folder at the site
    if (w.name.starts_with("output/")) {
      EXPECT_TRUE(w.tree) << w.name;
    }
  }
  std::vector<std::pair<std::string, std::string>> writable;
  for (const auto& w : kite->writable) writable.emplace_back(w.name, w.path);
  EXPECT_NE(std::find(writable.begin(), writable.end(),
                      std::pair<std::string, std::string>{"output/sub/t.csv",
                                                          "/home/jane/run/tables/t.csv"}),
            writable.end());
}

TEST(PlanGridJob, StagesExecutableInputAndOutputs) {
  auto plan = PlanGridJob(Ad(std::string(kBase) +
                             "Cmd = \"analyse.sh\"\n"
                             "Arguments = \"--chunk 'a b'\"\n"
                             "Environment = \"A=1 B=two\"\n"
                             "In = \"in.txt\"\nOut = \"out.txt\"\nErr = \"/abs/err.txt\"\n"
                             "StreamOut = true\n"
                             "TransferInputFiles = \"data/x.dat, params.txt\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  const auto& d = plan->desc;
  EXPECT_EQ(d.executable.gass, "executable");
  EXPECT_EQ(d.arguments, (std::vector<std::string>{"--chunk", "a b"}));
  ASSERT_EQ(d.environment.size(), 2u);
  EXPECT_EQ(d.environment[1], (std::pair<std::string, std::string>{"B", "two"}));
  EXPECT_EQ(d.stdin_file.gass, "stdin");
  EXPECT_EQ(d.stdout_file.gass, "stdout");
  EXPECT_EQ(d.stderr_file.gass, "stderr");
  EXPECT_TRUE(d.stream_output);
  EXPECT_FALSE(d.stream_error);
  ASSERT_EQ(d.stage_in.size(), 2u);
  EXPECT_EQ(d.stage_in[0].gass, "input/x.dat");
  EXPECT_EQ(d.stage_in[0].as, "x.dat");
  ASSERT_EQ(plan->readable.size(), 4u);
  EXPECT_EQ(plan->readable[0].path, "/home/jane/run/analyse.sh");
  EXPECT_EQ(plan->readable[2].path, "/home/jane/run/data/x.dat");
  ASSERT_EQ(plan->writable.size(), 2u);
  EXPECT_EQ(plan->writable[0].path, "/home/jane/run/out.txt");
  EXPECT_EQ(plan->writable[1].path, "/abs/err.txt");
  EXPECT_EQ(plan->proxy, "/tmp/x509up_u1");
  EXPECT_EQ(plan->resource.batch, "fork");
}

// The names and forms kite submit writes (condor_submit's): old-syntax arguments in Args, the
// input list in TransferInput.
TEST(PlanGridJob, ReadsCondorSubmitsArgsAndTransferInput) {
  auto plan = PlanGridJob(Ad(std::string(kBase) + "Cmd = \"p\"\nArgs = \"-n 5 \\\"x\\\" y\"\n"
                                                  "TransferInput = \"data/x.dat,params.txt\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->desc.arguments, (std::vector<std::string>{"-n", "5", "\"x\"", "y"}));
  ASSERT_EQ(plan->desc.stage_in.size(), 2u);
  EXPECT_EQ(plan->desc.stage_in[1].as, "params.txt");
  auto clash = PlanGridJob(Ad(std::string(kBase) + "Cmd = \"p\"\nTransferInput = \"a/x, b/x\"\n"));
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().message().find("TransferInput"), std::string::npos);
}

TEST(PlanGridJob, SiteExecutableAndNoFiles) {
  auto plan =
      PlanGridJob(Ad(std::string(kBase) + "Cmd = \"/bin/true\"\nTransferExecutable = false\n"
                                          "Out = \"/dev/null\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->desc.executable.site, "/bin/true");
  EXPECT_TRUE(plan->desc.stdout_file.empty());
  EXPECT_TRUE(plan->readable.empty());
  EXPECT_TRUE(plan->writable.empty());
}

TEST(PlanGridJob, RefusesWhatCannotRunAsDescribed) {
  struct Case {
    std::string extra, attr;
  };
  for (const auto& c : std::vector<Case>{
           {"Cmd = \"rel/prog\"\nTransferExecutable = false\n", "Cmd"},
           {"Cmd = \"p\"\nOut = \"o\"\nErr = \"o\"\n", "Err"},
           {"Cmd = \"p\"\nTransferInputFiles = \"a/x, b/x\"\n", "TransferInputFiles"},
           {"Cmd = \"p\"\nTransferInputFiles = \"https://h/x\"\n", "TransferInputFiles"},
           {"Cmd = \"p\"\nTransferInputFiles = \"..\"\n", "TransferInputFiles"},
           {"Cmd = \"p\"\nArguments = \"'unterminated\"\n", "Arguments"},
           {"", "Cmd"},
       }) {
    auto plan = PlanGridJob(Ad(std::string(kBase) + c.extra));
    ASSERT_FALSE(plan) << c.extra;
    EXPECT_NE(plan.error().message().find(c.attr), std::string::npos) << plan.error().message();
  }
  auto no_proxy = PlanGridJob(Ad("GridResource = \"kite h:1\"\nCmd = \"/bin/true\"\n"));
  ASSERT_FALSE(no_proxy);
  EXPECT_NE(no_proxy.error().message().find("x509userproxy"), std::string::npos);
}

TEST(PlanGridJob, ResourceRequestsReachTheJobDescription) {
  auto plan = PlanGridJob(Ad(std::string(kBase) +
                             "Cmd = \"/bin/true\"\nTransferExecutable = false\n"
                             "RequestCpus = 4\nRequestMemory = 2048\nMaxWallTime = 90\n"
                             "BatchQueue = \"short\"\nBatchProject = \"phys-123\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->desc.resources, (gram::ResourceRequest{.cpus = 4,
                                                         .memory_mb = 2048,
                                                         .walltime_s = 90 * 60,
                                                         .queue = "short",
                                                         .project = "phys-123"}));
  // And they survive the trip to the site.
  auto back = gram::ParseJobDescription(gram::ToJson(plan->desc));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->resources, plan->desc.resources);
}

TEST(PlanGridJob, ResourceRequestsAreEvaluatedAndRoundedUp) {
  auto plan =
      PlanGridJob(Ad(std::string(kBase) + "Cmd = \"/bin/true\"\nTransferExecutable = false\n"
                                          "RequestCpus = 1 + 1\nRequestMemory = 1.5 * 1024 + 0.2\n"
                                          "BatchRuntime = 7200\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->desc.resources.cpus, 2);
  EXPECT_EQ(plan->desc.resources.memory_mb, 1537);
  EXPECT_EQ(plan->desc.resources.walltime_s, 7200);  // HTCondor's batch_runtime
  EXPECT_TRUE(plan->desc.resources.queue.empty());
  // MaxWallTime (minutes, as HTCondor-CE's) wins over BatchRuntime (seconds).
  plan = PlanGridJob(Ad(std::string(kBase) + "Cmd = \"/bin/true\"\nTransferExecutable = false\n"
                                             "BatchRuntime = 7200\nMaxWallTime = 60\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->desc.resources.walltime_s, 3600);
}

TEST(PlanGridJob, NoRequestsLeaveTheSiteDefaults) {
  auto plan = PlanGridJob(Ad(std::string(kBase) + "Cmd = \"/bin/true\"\n"));
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(plan->desc.resources.empty());
}

TEST(PlanGridJob, RefusesResourceRequestsTheBatchSystemCannotTake) {
  struct Case {
    std::string extra, message;
  };
  for (const auto& c : std::vector<Case>{
           {"RequestCpus = -1", "RequestCpus: -1 CPUs is out of range"},
           {"RequestCpus = 2000000", "RequestCpus: 2000000 CPUs is out of range (0 to 1048576)"},
           {"RequestMemory = \"lots\"",
            "RequestMemory: '\"lots\"' is not a number of MB (it evaluates to \"lots\")"},
           {"RequestMemory = ifThenElse(MemoryUsage > 100, 200, 100)",
            "RequestMemory: 'ifThenElse(MemoryUsage > 100, 200, 100)' is not a number of MB "
            "(it evaluates to undefined)"},
           {"MaxWallTime = -60", "MaxWallTime: -60 minutes is out of range"},
           {"MaxWallTime = 1e30", "MaxWallTime: "},
           {"MaxWallTime = true", "MaxWallTime: 'true' is not a number of minutes"},
           {"BatchRuntime = \"1h\"", "BatchRuntime: '\"1h\"' is not a number of seconds"},
           {"BatchQueue = \"short queue\"",
            "BatchQueue: 'short queue' is not a batch system name (1 to 64 of A-Z a-z 0-9 _ . + "
            "-)"},
           {"BatchQueue = \"\"", "BatchQueue: '' is not a batch system name"},
           {"BatchQueue = 3", "BatchQueue: '3' is not a string"},
           {"BatchProject = \"a;b\"", "BatchProject: 'a;b' is not a batch system name"},
           {"BatchProject = \"" + std::string(65, 'p') + "\"", "BatchProject: 'ppp"},
       }) {
    auto plan = PlanGridJob(
        Ad(std::string(kBase) + "Cmd = \"/bin/true\"\nTransferExecutable = false\n" + c.extra));
    ASSERT_FALSE(plan) << c.extra;
    EXPECT_EQ(plan.error().code(), ErrorCode::kInvalidInput);
    EXPECT_NE(plan.error().message().find(c.message), std::string::npos)
        << c.extra << ": " << plan.error().message();
  }
}

TEST(RequestIdBase, SameForTheSameAttemptAndValidOnTheWire) {
  auto ad = Ad(kBase);
  EXPECT_EQ(RequestIdBase(ad, 0), "kite-1700000000-12.3-0");
  EXPECT_NE(RequestIdBase(ad, 0), RequestIdBase(ad, 1));
  EXPECT_TRUE(gram::ValidRequestId(RequestIdBase(ad, 7) + "/commit-end"));
}

}  // namespace
}  // namespace kite::gridmanager
