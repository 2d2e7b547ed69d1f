// The gridmanager's engine driven in-process with a fake site and a fake agent: the normal path,
// each failure class, removal and hold at each phase, and restarts at every phase.
#include "gridmanager/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "grid/grid_type.h"
#include "grid/site_link.h"
#include "tests/unit/gridmanager/engine_fakes.h"

namespace kite::gridmanager {
namespace {

using namespace kite::gridmanager::testing;
using P = GridPhase;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Boot(); }
  void TearDown() override { Down(); }

  void Boot(double probe_interval = 3600) {
    io_ = std::make_unique<asio::io_context>();
    site_.SetIo(io_.get());
    agent_.SetIo(io_.get());
    EngineOptions o{.proxy = "/tmp/x509up",
                    .probe_interval = probe_interval,
                    .max_resubmits = 3,
                    .linger = 3600,
                    .backoff_min = 0.05,
                    .backoff_max = 0.05,
                    .run_id = ++runs_};
    SiteConnector connect = [this](const GridResource&) -> Result<std::shared_ptr<SiteLink>> {
      return std::make_shared<FakeSiteLink>(site_);
    };
    // Through the registry, as kite-gridmanager connects.
    if (by_registry_) connect = [](const GridResource& r) { return grid::ConnectSite(r, {}); };
    engine_ = std::make_unique<Engine>(*io_, o, connect, agent_, endpoints_);
    engine_->Start([this](int code, const std::string&) { exit_code_ = code; });
  }
  void Down() {
    engine_.reset();
    io_.reset();
  }
  // A crash of the gridmanager at this instant, and a new one started.
  // `reached`: requests under way reached the site (their answers are lost); else they did not.
  void Restart(double probe_interval = 3600, bool reached = true) {
    if (reached) {
      site_.LoseAnswers();
    } else {
      site_.Drop();
    }
    agent_.Crash();
    Down();
    ++endpoints_.run;
    Boot(probe_interval);
  }
  // Runs the engine until `done` holds (at most 5 s).
  bool RunUntil(const std::function<bool()>& done) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < end) {
      io_->run_for(std::chrono::milliseconds(5));
    }
    return done();
  }
  P Phase(const std::string& id) {
    const GridState* s = engine_->Find(id);
    return s ? s->phase : P::kIdle;
  }
  bool At(const std::string& id, P phase) {
    return RunUntil([&] { return engine_->Find(id) && Phase(id) == phase; });
  }
  std::string SiteId(const std::string& id) {
    return gram::JobIdFromContact(engine_->Find(id)->contact);
  }
  void Callback(const gram::JobStatus& st) { engine_->OnCallback(st); }
  // The last update of `id` whose action is `action`.
  std::optional<grid::GridUpdate> Last(const std::string& id, grid::GridAction action) {
    std::optional<grid::GridUpdate> out;
    for (const auto& u : agent_.UpdatesFor(id)) {
      if (u.action == action) out = u;
    }
    return out;
  }
  bool Gone(const std::string& id) {
    return RunUntil([&] { return !agent_.jobs.count(id) && !engine_->Find(id); });
  }

  FakeSite site_;
  FakeAgent agent_;
  FakeEndpoints endpoints_;
  std::unique_ptr<asio::io_context> io_;
  std::unique_ptr<Engine> engine_;
  int64_t runs_ = 0;
  int exit_code_ = -1;
  bool by_registry_ = false;
  void BootWithToyGridTypes();  // defined beside the toy grid types
};

TEST_F(EngineTest, TheNormalPathStoresTheContactBeforeTheCommitAndTheEndBeforeCommitEnd) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(site_.Sent(true), (std::vector<std::string>{"submit kite-1700000000-1.0-0/submit",
                                                        "commit kite-1700000000-1.0-0/commit"}));
  auto updates = agent_.UpdatesFor("1.0");
  ASSERT_GE(updates.size(), 2u);
  // The contact, with the grid-submit event, was committed before the commit went out.
  ASSERT_TRUE(updates[0].event);
  EXPECT_EQ(updates[0].event->code, kite::kEventGridSubmit);
  EXPECT_EQ(updates[0].set[0].attr, grid::GridAttr::kJobId);
  EXPECT_EQ(updates[1].action, grid::GridAction::kRunning);
  EXPECT_EQ(agent_.jobs.at("1.0").status, kite::kRunning);

  Callback(site_.End(SiteId("1.0"), gram::JobState::kDone));
  ASSERT_TRUE(Gone("1.0"));
  EXPECT_EQ(site_.Sent().back(), "commit-end");
  auto all = agent_.UpdatesFor("1.0");
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[all.size() - 2].set[0].attr, grid::GridAttr::kFinal);  // stored first
  EXPECT_EQ(all.back().action, grid::GridAction::kExited);
  EXPECT_TRUE(site_.jobs.empty());  // commit-end let the site forget it
}

// A link's news of a job (a GRAM5 job manager's callback) has its status asked at once, though
// probes are an hour apart; news that comes while a probe is out is asked again after it; news of
// a job this engine does not know changes nothing.
TEST_F(EngineTest, NewsFromALinkAsksTheJobsStatusAtOnce) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  auto probes = [&] {
    auto sent = site_.Sent();
    return std::count(sent.begin(), sent.end(), "status probe");
  };
  ASSERT_EQ(probes(), 0);
  engine_->OnNews("no-such-job");
  engine_->OnNews(SiteId("1.0"));
  ASSERT_TRUE(RunUntil([&] { return probes() == 1 && Phase("1.0") == P::kCommitted; }));
  engine_->OnNews(SiteId("1.0"));
  EXPECT_EQ(Phase("1.0"), P::kProbing);
  engine_->OnNews(SiteId("1.0"));  // while that probe is out
  EXPECT_TRUE(RunUntil([&] { return probes() == 3 && Phase("1.0") == P::kCommitted; }))
      << probes() << " probes";
  for (int i = 0; i < 20; ++i) io_->run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(probes(), 3) << "news is asked for once, not again and again";
}

TEST_F(EngineTest, ASiteThatDoesNotAnswerIsBackedOffNotHeld) {
  site_.down = true;
  agent_.Add("1.0");
  ASSERT_TRUE(RunUntil([&] { return site_.requests.size() >= 3; }));  // retried after back-off
  EXPECT_EQ(Phase("1.0"), P::kIdle);
  EXPECT_FALSE(Last("1.0", grid::GridAction::kHold));
  site_.down = false;
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(agent_.jobs.at("1.0").status, kite::kRunning);
}

TEST_F(EngineTest, ARefusedSubmitHoldsTheJobWithTheReason) {
  for (auto [code, hold] : {std::pair{ErrorCode::kAuthFailed, kite::kHoldCorruptedCredential},
                            std::pair{ErrorCode::kInvalidInput, kite::kHoldGridError}}) {
    site_.refuse[Op::kSubmit] = Error(code, "no");
    std::string id = std::to_string(static_cast<int>(code)) + ".0";
    agent_.Add(id);
    ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at(id).status == kite::kHeld; }));
    auto u = Last(id, grid::GridAction::kHold);
    ASSERT_TRUE(u);
    EXPECT_EQ(u->hold_code, hold);
    EXPECT_NE(u->reason.find("refused the submit: no"), std::string::npos) << u->reason;
  }
}

TEST_F(EngineTest, ARetryableFailureResubmitsWithANewAttempt) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  Callback(site_.End(SiteId("1.0"), gram::JobState::kFailed, gram::FailureCode::kStageInFailed));
  ASSERT_TRUE(
      RunUntil([&] { return site_.Sent(true).back() == "commit kite-1700000000-1.0-1/commit"; }));
  auto idle = Last("1.0", grid::GridAction::kIdle);
  ASSERT_TRUE(idle);
  EXPECT_NE(idle->reason.find("resubmitting (attempt 2 of 4)"), std::string::npos);
  EXPECT_EQ(site_.Sent(true)[2], "commit-end kite-1700000000-1.0-0/commit-end");
  EXPECT_EQ(site_.Sent(true)[3], "submit kite-1700000000-1.0-1/submit");
}

TEST_F(EngineTest, AnUncommittedJobTheSiteForgotIsSubmittedAgain) {
  site_.fail_once[Op::kCommit] = ErrorCode::kNotFound;
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(site_.Sent(true),
            (std::vector<std::string>{
                "submit kite-1700000000-1.0-0/submit", "commit kite-1700000000-1.0-0/commit",
                "submit kite-1700000000-1.0-1/submit", "commit kite-1700000000-1.0-1/commit"}));
  EXPECT_FALSE(Last("1.0", grid::GridAction::kHold));
}

TEST_F(EngineTest, AnExpiredProxyHoldsWithTheCredentialCode) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  Callback(
      site_.End(SiteId("1.0"), gram::JobState::kFailed, gram::FailureCode::kCredentialExpired));
  ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at("1.0").status == kite::kHeld; }));
  EXPECT_EQ(Last("1.0", grid::GridAction::kHold)->hold_code, kite::kHoldCorruptedCredential);
  // Refused by the site's TLS for an expired proxy while committing: held, and cancelled there.
  site_.refuse[Op::kCommit] = Error(ErrorCode::kProxyExpired, "proxy expired");
  agent_.Add("2.0");
  ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at("2.0").status == kite::kHeld; }));
  EXPECT_EQ(Last("2.0", grid::GridAction::kHold)->hold_code, kite::kHoldCorruptedCredential);
  ASSERT_TRUE(RunUntil([&] { return !engine_->Find("2.0"); }));
  EXPECT_TRUE(site_.jobs.empty());  // cancelled and forgotten there
}

TEST_F(EngineTest, ADelegationRefusedHoldsWaitingJobs) {
  site_.refuse[Op::kDelegate] = Error(ErrorCode::kAuthFailed, "not in the grid-mapfile");
  agent_.Add("1.0");
  ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at("1.0").status == kite::kHeld; }));
  auto u = Last("1.0", grid::GridAction::kHold);
  EXPECT_EQ(u->hold_code, kite::kHoldCorruptedCredential);
  EXPECT_NE(u->reason.find("refused the proxy"), std::string::npos);
  EXPECT_TRUE(site_.Sent().empty());
}

// Removal while the job is in each phase. Before the contact is stored the job leaves the queue
// at once and is never committed; after, it is cancelled and forgotten at the site, then retired.
TEST_F(EngineTest, RemovalAtEachPhaseNeverLetsTheJobRun) {
  for (P phase : {P::kSubmitting, P::kSavingContact, P::kCommitting, P::kCommitted}) {
    std::string cluster = std::to_string(static_cast<int>(phase) + 10);
    std::string id = cluster + ".0";
    if (phase == P::kSubmitting) site_.hold = {Op::kSubmit};
    if (phase == P::kCommitting) site_.hold = {Op::kCommit};
    agent_.hold_updates = phase == P::kSavingContact;
    agent_.Add(id);
    ASSERT_TRUE(At(id, phase)) << PhaseName(phase);
    agent_.Remove(id);
    agent_.hold_updates = false;
    agent_.Commit();
    site_.hold.clear();
    site_.Release();
    ASSERT_TRUE(Gone(id)) << PhaseName(phase);
    bool stored = phase == P::kCommitting || phase == P::kCommitted;
    EXPECT_EQ(Last(id, grid::GridAction::kRetire).has_value(), stored) << PhaseName(phase);
    auto sent = site_.Sent(true);
    std::string commit = "commit kite-1700000000-" + id + "-0/commit";
    bool committed = std::find(sent.begin(), sent.end(), commit) != sent.end();
    EXPECT_EQ(committed, stored) << PhaseName(phase);
    if (stored) {
      EXPECT_EQ(sent.back(), "commit-end kite-1700000000-" + id + "-0/commit-end");
    }
  }
  // The two never stored stay uncommitted at the site (its commit timeout forgets them).
  EXPECT_EQ(site_.jobs.size(), 2u);
  for (const auto& [sid, j] : site_.jobs) EXPECT_FALSE(j.committed);
}

// A hold while the job is in each phase: whatever reached the site is cancelled and forgotten
// there before it is committed (or after, once it runs), and the job stays held, unknown to the
// gridmanager until released.
TEST_F(EngineTest, AHoldAtEachPhaseCancelsWhatReachedTheSite) {
  for (P phase : {P::kSubmitting, P::kSavingContact, P::kCommitting, P::kCommitted}) {
    std::string id = std::to_string(static_cast<int>(phase) + 20) + ".0";
    if (phase == P::kSubmitting) site_.hold = {Op::kSubmit};
    if (phase == P::kCommitting) site_.hold = {Op::kCommit};
    agent_.hold_updates = phase == P::kSavingContact;
    agent_.Add(id);
    ASSERT_TRUE(At(id, phase)) << PhaseName(phase);
    agent_.SetStatus(id, kite::kHeld);
    agent_.hold_updates = false;
    agent_.Commit();
    site_.hold.clear();
    site_.Release();
    ASSERT_TRUE(RunUntil([&] { return !engine_->Find(id); })) << PhaseName(phase);
    EXPECT_EQ(agent_.jobs.at(id).status, kite::kHeld);
    EXPECT_TRUE(site_.jobs.empty()) << PhaseName(phase);  // cancelled and forgotten there
    auto sent = site_.Sent(true);
    bool committed = std::find(sent.begin(), sent.end(),
                               "commit kite-1700000000-" + id + "-0/commit") != sent.end();
    EXPECT_EQ(committed, phase == P::kCommitting || phase == P::kCommitted) << PhaseName(phase);
    EXPECT_EQ(sent.back(), "commit-end kite-1700000000-" + id + "-0/commit-end");
  }
}

TEST_F(EngineTest, AHeldJobIsCancelledAndAReleaseStartsANewAttempt) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  agent_.SetStatus("1.0", kite::kHeld);
  ASSERT_TRUE(RunUntil([&] { return !engine_->Find("1.0"); }));
  EXPECT_TRUE(site_.jobs.empty());
  EXPECT_EQ(agent_.jobs.at("1.0").status, kite::kHeld);
  agent_.SetStatus("1.0", kite::kIdle);
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(site_.Sent(true).back(), "commit kite-1700000000-1.0-1/commit");
}

// A crash with the job in each phase; the next run resends what was under way with the same
// request id (the site answers it from its records), and the job runs and is reported once.
struct RestartCase {
  P phase;
  Op op;            // the request of the phase
  bool ended;       // the job ended at the site before the crash
  bool hold_site;   // the request of the phase is under way at the crash ...
  bool reached;     // ... and reached the site (its answer lost), or did not
  bool hold_agent;  // the update of the phase is not committed at the crash
  bool resends;     // the next run sends a request of the first run again
};

class RestartTest : public EngineTest, public ::testing::WithParamInterface<RestartCase> {};

TEST_P(RestartTest, ResendsTheSameRequestIdsAndRunsOnce) {
  const RestartCase& c = GetParam();
  agent_.Add("1.0");
  if (c.ended) {
    ASSERT_TRUE(At("1.0", P::kCommitted));
    if (c.hold_site || c.phase == P::kReporting) site_.hold = {c.op};
    agent_.hold_updates = c.hold_agent && c.phase != P::kReporting;
    Callback(site_.End(SiteId("1.0"), gram::JobState::kDone));
    if (c.phase == P::kReporting) {  // commit-end answered, its report not committed
      ASSERT_TRUE(At("1.0", P::kEnding));
      agent_.hold_updates = true;
      site_.hold.clear();
      site_.Release();
    }
  } else {
    if (c.hold_site) site_.hold = {c.op};
    agent_.hold_updates = c.hold_agent;
  }
  ASSERT_TRUE(RunUntil([&] {
    return engine_->Find("1.0") && Phase("1.0") == c.phase && (site_.held() > 0 || !c.hold_site) &&
           (agent_.held() > 0 || !c.hold_agent);
  })) << PhaseName(c.phase);
  auto before = site_.Sent(true);
  Restart(0.1, c.reached);  // probes find an end whose callback the crash lost
  site_.hold.clear();
  agent_.hold_updates = false;
  if (!c.ended) {
    ASSERT_TRUE(At("1.0", P::kCommitted)) << PhaseName(c.phase);
    // The job at the site reaches this run's GASS server, whichever run's submit made it.
    EXPECT_EQ(site_.jobs.at(SiteId("1.0")).gass_url, endpoints_.GassUrl("1.0"))
        << PhaseName(c.phase);
    Callback(site_.End(SiteId("1.0"), gram::JobState::kDone));
  }
  ASSERT_TRUE(Gone("1.0")) << PhaseName(c.phase);
  auto after = site_.Sent(true);
  // Every request of the first run that is sent again has the same id.
  int resent = 0;
  for (size_t i = before.size(); i < after.size(); ++i) {
    std::string op = after[i].substr(0, after[i].find(' '));
    for (const auto& old : before) {
      if (old.substr(0, old.find(' ')) != op) continue;
      EXPECT_EQ(after[i], old) << PhaseName(c.phase);
      ++resent;
    }
  }
  EXPECT_EQ(resent > 0, c.resends) << PhaseName(c.phase);
  // One job at the site, reported ended once.
  int submits = 0, exits = 0;
  for (const auto& s : after) submits += s.rfind("submit ", 0) == 0;
  for (const auto& u : agent_.UpdatesFor("1.0")) exits += u.action == grid::GridAction::kExited;
  EXPECT_EQ(exits, 1);
  EXPECT_TRUE(site_.jobs.empty());
  for (const auto& s : after) {
    if (s.rfind("submit ", 0) == 0) {
      EXPECT_EQ(s, "submit kite-1700000000-1.0-0/submit");
    }
  }
  EXPECT_GE(submits, 1);
}

INSTANTIATE_TEST_SUITE_P(
    EveryPhase, RestartTest,
    ::testing::Values(
        // phase, its request, ended, under way, reached, uncommitted, resends
        RestartCase{P::kSubmitting, Op::kSubmit, false, true, false, false, true},
        RestartCase{P::kSubmitting, Op::kSubmit, false, true, true, false, true},
        RestartCase{P::kSavingContact, Op::kSubmit, false, false, false, true, true},
        // The commit never reached the site: the signal commits it (as a Kite gatekeeper's
        // does), so the commit is not sent again either.
        RestartCase{P::kCommitting, Op::kCommit, false, true, false, false, false},
        // The commit was done: the signal's reply says so, and no commit is resent.
        RestartCase{P::kCommitting, Op::kCommit, false, true, true, false, false},
        RestartCase{P::kCommitted, Op::kCommit, false, false, false, false, false},
        // The signal finds the job ended; the commit (resent) and a probe tell how.
        RestartCase{P::kSavingFinal, Op::kCommit, true, false, false, true, true},
        RestartCase{P::kEnding, Op::kCommitEnd, true, true, false, false, true},
        RestartCase{P::kEnding, Op::kCommitEnd, true, true, true, false, true},
        RestartCase{P::kReporting, Op::kCommitEnd, true, false, false, true, true}),
    [](const ::testing::TestParamInfo<RestartCase>& param) {
      std::string name(PhaseName(param.param.phase));
      std::erase(name, '-');
      if (param.param.hold_site) name += param.param.reached ? "Reached" : "NotReached";
      return name;
    });

TEST_F(EngineTest, ARestartedEngineSignalsJobsAtTheSiteAndReportsThemHeard) {
  agent_.Add("1.0");
  agent_.Add("2.0");
  ASSERT_TRUE(
      RunUntil([&] { return Phase("1.0") == P::kCommitted && Phase("2.0") == P::kCommitted; }));
  Restart();
  ASSERT_TRUE(
      RunUntil([&] { return Phase("1.0") == P::kCommitted && Phase("2.0") == P::kCommitted; }));
  int signals = 0;
  for (const auto& r : site_.requests) {
    if (r.op == Op::kSignal) {
      ++signals;
      EXPECT_EQ(r.signal.callback_url.rfind(endpoints_.CallbackUrl(""), 0), 0u);  // this run's
      EXPECT_EQ(r.signal.delegation_id, "deleg-2");  // moved to this run's delegation
    }
  }
  EXPECT_EQ(signals, 2);
}

TEST_F(EngineTest, ARefreshedProxyRefreshesTheDelegationInPlace) {
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  engine_->OnProxyRefreshed(2);
  EXPECT_EQ(site_.requests.back().op, Op::kDelegate);
  EXPECT_EQ(site_.requests.back().delegation_id, "deleg-1");
  io_->run_for(std::chrono::milliseconds(50));  // the refresh is answered
  // A refresh the site refuses: jobs there are moved to a new delegation.
  site_.refuse[Op::kDelegate] = Error(ErrorCode::kNotFound, "no delegation deleg-1");
  engine_->OnProxyRefreshed(3);
  site_.refuse.clear();
  ASSERT_TRUE(RunUntil([&] { return site_.requests.back().op == Op::kSignal; }));
  EXPECT_EQ(site_.requests.back().signal.delegation_id, "deleg-3");
  EXPECT_TRUE(At("1.0", P::kCommitted));
}

TEST_F(EngineTest, AProbeFindsAJobTheSiteLostAndRunsItAgain) {
  engine_.reset();
  io_.reset();
  io_ = std::make_unique<asio::io_context>();
  site_.SetIo(io_.get());
  agent_.SetIo(io_.get());
  EngineOptions o{.proxy = "/tmp/x509up", .probe_interval = 0.01, .linger = 3600};
  engine_ = std::make_unique<Engine>(
      *io_, o,
      [this](const GridResource&) -> Result<std::shared_ptr<SiteLink>> {
        return std::make_shared<FakeSiteLink>(site_);
      },
      agent_, endpoints_);
  engine_->Start([](int, const std::string&) {});
  agent_.Add("1.0");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  site_.jobs.clear();  // the site lost it
  ASSERT_TRUE(
      RunUntil([&] { return site_.Sent(true).back() == "commit kite-1700000000-1.0-1/commit"; }));
  auto idle = Last("1.0", grid::GridAction::kIdle);
  ASSERT_TRUE(idle);
  EXPECT_NE(idle->reason.find("batch-lost"), std::string::npos);
}

// A grid type added in this test binary only: a registry row (its own contact syntax, "toy NAME")
// and a link to the fake site. Jobs of that type run through the real engine, and the views and
// submit read the type through the row.
FakeSite* toy_site = nullptr;

void AddToyGridType() {
  static bool added = [] {
    grid::GridType row{
        .name = "toy",
        .display = "toy site",
        .syntax = "NAME",
        .example = "box1",
        .parse = [](std::string_view contact) -> Result<GridResource> {
          if (contact.empty() || contact.find_first_of(" /:") != std::string_view::npos) {
            return Fail(ErrorCode::kInvalidInput, "a toy site is one word");
          }
          return GridResource{.host = std::string(contact), .port = 1};
        },
        .label = [](const GridResource& r) { return "toy@" + r.host; },
        .caps = {.site_info = false},
    };
    EXPECT_TRUE(grid::AddGridType(row));
    // Both toy types' link: the fake site of the test that runs.
    grid::LinkMaker to_toy_site =
        [](const GridResource&, const grid::LinkContext&) -> Result<std::shared_ptr<SiteLink>> {
      return std::make_shared<FakeSiteLink>(*toy_site);
    };
    EXPECT_TRUE(grid::AddSiteLink("toy", to_toy_site));
    // A row whose link this gridmanager does not have.
    row.name = "nolink";
    EXPECT_TRUE(grid::AddGridType(row));
    // A type whose protocol has no commit step.
    row.name = "toync";
    row.caps.two_phase_commit = false;
    EXPECT_TRUE(grid::AddGridType(row));
    EXPECT_TRUE(grid::AddSiteLink("toync", to_toy_site));
    return true;
  }();
  (void)added;
}

// The engine again, connecting through the registry, with the toy types' links on this test's
// fake site.
void EngineTest::BootWithToyGridTypes() {
  AddToyGridType();
  toy_site = &site_;
  by_registry_ = true;
  Down();
  Boot();
}

TEST_F(EngineTest, AGridTypeAddedAsOneRowAndOneLinkRunsJobsThroughTheEngine) {
  BootWithToyGridTypes();
  EXPECT_FALSE(grid::AddGridType({.name = "TOY",
                                  .parse = [](std::string_view) { return Result<GridResource>(); },
                                  .label = [](const GridResource&) { return std::string(); }}))
      << "a name is registered once";
  EXPECT_EQ(grid::GridTypeNames(), "kite, arc, gt5, toy, nolink, toync");
  auto r = grid::ParseGridResource("Toy box1");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->Text(), "toy box1:1");
  EXPECT_FALSE(grid::ParseGridResource("toy box 1"));

  agent_.Add("1.0", kite::kIdle, "toy box1");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(site_.Sent(true), (std::vector<std::string>{"submit kite-1700000000-1.0-0/submit",
                                                        "commit kite-1700000000-1.0-0/commit"}));
  Callback(site_.End(SiteId("1.0"), gram::JobState::kDone));
  ASSERT_TRUE(Gone("1.0"));
  EXPECT_EQ(Last("1.0", grid::GridAction::kExited)->exit->code, 0);

  // A type the registry knows but this gridmanager has no link for: held, saying so.
  agent_.Add("2.0", kite::kIdle, "nolink box2");
  ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at("2.0").status == kite::kHeld; }));
  auto held = Last("2.0", grid::GridAction::kHold);
  ASSERT_TRUE(held);
  EXPECT_NE(held->reason.find("no link for grid type 'nolink'"), std::string::npos) << held->reason;
  // And one the registry does not know.
  agent_.Add("3.0", kite::kIdle, "nordugrid gk.example.org:2119/jobmanager-slurm");
  ASSERT_TRUE(RunUntil([&] { return agent_.jobs.at("3.0").status == kite::kHeld; }));
  EXPECT_NE(Last("3.0", grid::GridAction::kHold)->reason.find("'nordugrid' is not one Kite runs"),
            std::string::npos);
  toy_site = nullptr;
}

TEST_F(EngineTest, AGridTypeWithoutACommitStepIsNeverSentACommit) {
  BootWithToyGridTypes();
  agent_.Add("1.0", kite::kIdle, "toync box1");
  ASSERT_TRUE(At("1.0", P::kCommitted));
  EXPECT_EQ(site_.Sent(true), (std::vector<std::string>{"submit kite-1700000000-1.0-0/submit"}));
  EXPECT_TRUE(agent_.UpdatesFor("1.0").front().event) << "the contact was stored first";
  Callback(site_.End(SiteId("1.0"), gram::JobState::kDone));
  ASSERT_TRUE(Gone("1.0"));
  EXPECT_EQ(Last("1.0", grid::GridAction::kExited)->exit->code, 0);
  toy_site = nullptr;
}

TEST_F(EngineTest, TheEngineExitsWhenNoJobsRemain) {
  engine_.reset();
  io_.reset();
  io_ = std::make_unique<asio::io_context>();
  site_.SetIo(io_.get());
  agent_.SetIo(io_.get());
  EngineOptions o{.proxy = "/tmp/x509up", .linger = 0};
  engine_ = std::make_unique<Engine>(
      *io_, o, [](const GridResource&) -> Result<std::shared_ptr<SiteLink>> { return nullptr; },
      agent_, endpoints_);
  engine_->Start([this](int code, const std::string&) { exit_code_ = code; });
  ASSERT_TRUE(RunUntil([&] { return exit_code_ >= 0; }));
  EXPECT_EQ(exit_code_, 0);
}

}  // namespace
}  // namespace kite::gridmanager
