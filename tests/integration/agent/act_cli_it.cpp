// Changing jobs with condor_rm's and condor_qedit's habits: -all, owner names, qedit with
// ClassAd values and protected attributes refused by name.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ActCli : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("act-cli");
    env_->StartAgent();
    c_ = std::to_string(
        env_->Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nhold = true\n"
                     "queue 3\n"));
    owner_ = env_->Kite({"q", c_ + ".0", "-af", "Owner"}).out;
    if (!owner_.empty() && owner_.back() == '\n') owner_.pop_back();
  }
  std::string Af(const std::string& what) {
    auto r = env_->Kite({"q", c_, "-af", what});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::unique_ptr<KiteEnv> env_;
  std::string c_, owner_;
};

TEST_F(ActCli, OwnerNamesAndAll) {
  ASSERT_FALSE(owner_.empty());
  auto r = env_->Kite({"release", owner_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "3 job(s) released.")) << r.out;
  r = env_->Kite({"hold", owner_, "-reason", "pause"});
  EXPECT_TRUE(Has(r.out, "3 job(s) held.")) << r.out;
  EXPECT_EQ(Af("HoldReason"), "pause\npause\npause\n");
  r = env_->Kite({"rm", "nobody-else"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "no jobs of user nobody-else matched")) << r.err;
  r = env_->Kite({"rm", owner_, c_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "not both")) << r.err;
  r = env_->Kite({"rm", "-all", c_});
  EXPECT_NE(r.exit_code, 0);
  r = env_->Kite({"rm", "-all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "3 job(s) removed.")) << r.out;
  EXPECT_EQ(env_->Kite({"q", "-totals"}).out.find("Total for query: 0 jobs"), 0u);
}

TEST_F(ActCli, QeditSetsClassAdValues) {
  auto r = env_->Kite({"qedit", c_ + ".1", "Color", "\"blue\"", "Weight", "ProcId * 10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "Set attribute \"Color\" for 1 matching job(s).")) << r.out;
  EXPECT_EQ(Af("Color"), "undefined\nblue\nundefined\n");
  EXPECT_EQ(Af("Weight"), "undefined\n10\nundefined\n");
  r = env_->Kite({"qedit", "-constraint", "ProcId != 1", "Color", "\"red\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "for 2 matching job(s)")) << r.out;
  EXPECT_EQ(Af("Color"), "red\nblue\nred\n");
  // The edit is durable: the agent reads it back after a restart.
  env_->StopAgent();
  env_->StartAgent();
  EXPECT_EQ(Af("Color"), "red\nblue\nred\n");
}

TEST_F(ActCli, QeditRefusesProtectedAttributesAndBadValues) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  } cases[] = {
      {{"qedit", "C", "ClusterId", "7"}, "ClusterId is protected"},
      {{"qedit", "C", "procid", "7"}, "ProcId is protected"},
      {{"qedit", "C", "JobStatus", "1"}, "use kite hold, release or rm"},
      {{"qedit", "C", "Owner", "\"eve\""}, "Owner is protected"},
      {{"qedit", "C", "Color", "blue("}, "value of Color"},
      {{"qedit", "C", "Bad-Name", "1"}, "not an attribute name"},
      {{"qedit", "C", "Color"}, "ATTR VALUE pairs"},
      {{"qedit", "Color", "1"}, "needs a job id"},
      {{"qedit", "999", "Color", "1"}, "no matching jobs"},
  };
  for (auto& c : cases) {
    for (auto& a : c.args) a = a == "C" ? c_ : a;
    auto r = env_->Kite(c.args);
    EXPECT_NE(r.exit_code, 0) << c.expect;
    EXPECT_TRUE(Has(r.err, c.expect)) << c.expect << ": " << r.err;
  }
  EXPECT_EQ(Af("Owner"), owner_ + "\n" + owner_ + "\n" + owner_ + "\n");
  EXPECT_EQ(Af("Color"), "undefined\nundefined\nundefined\n");
}

// The "by user" of a default reason names who asked, as the kernel knows them at the agent's
// socket, not what $USER says (in the CLI's environment or the agent's).
TEST(ActCliCaller, DefaultReasonsNameTheRealUser) {
  const passwd* pw = ::getpwuid(::geteuid());
  ASSERT_NE(pw, nullptr);
  std::string me = pw->pw_name;
  ASSERT_NE(me, "somebody-else");
  KiteEnv env("act-caller");
  env.AddEnv("USER=somebody-else");
  env.StartAgent();
  std::string c = std::to_string(
      env.Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue 2\n"));
  auto r = env.Kite({"hold", c + ".0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(env.Kite({"q", c + ".0", "-af", "HoldReason"}).out,
            "via kite hold (by user " + me + ")\n");
  r = env.Kite({"rm", c});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The running job leaves the queue once its wrapper has stopped it: wait for its history.
  CommandResult h;
  EXPECT_TRUE(WaitUntil(
      [&] {
        h = env.Kite({"history", c + ".1", "-af", "RemoveReason"});
        return !h.out.empty();
      },
      10));
  EXPECT_EQ(h.out, "via kite rm (by user " + me + ")\n") << h.err;
}

}  // namespace
}  // namespace kite::testing
