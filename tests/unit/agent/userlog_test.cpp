#include "agent/userlog.h"

#include <gtest/gtest.h>

namespace kite::agent {
namespace {

TEST(UserLog, HeaderHasCodeIdAndDate) {
  auto e = FormatEvent(kEventSubmit, 12, 3, 0, EventBody(kEventSubmit, SubmitDetail("<h>")));
  // The date depends on the time zone; the rest is fixed.
  EXPECT_EQ(e.substr(0, 18), "000 (012.003.000) ");
  EXPECT_NE(e.find(" Job submitted from host: <h>\n...\n"), std::string::npos) << e;
}

TEST(UserLog, TerminatedNormallyAndBySignal) {
  ExecStatus ok;
  ok.code = 3;
  ok.utime = 65;
  auto body = EventBody(kEventTerminated, TerminatedDetail(ok));
  EXPECT_NE(body.find("Job terminated.\n\t(1) Normal termination (return value 3)"),
            std::string::npos);
  EXPECT_NE(body.find("\t\tUsr 0 00:01:05, Sys 0 00:00:00  -  Run Remote Usage"), std::string::npos)
      << body;
  ExecStatus sig;
  sig.kind = ExecStatus::Kind::kSignaled;
  sig.code = 9;
  body = EventBody(kEventTerminated, TerminatedDetail(sig));
  EXPECT_NE(body.find("\t(0) Abnormal termination (signal 9)\n\t(0) No core file"),
            std::string::npos);
}

TEST(UserLog, HeldReleasedAborted) {
  EXPECT_EQ(EventBody(kEventHeld, HeldDetail("disk full", 3, 7)),
            "Job was held.\n\tdisk full\n\tCode 3 Subcode 7");
  EXPECT_EQ(EventBody(kEventReleased, ReleasedDetail("via kite release")),
            "Job was released.\n\tvia kite release");
  EXPECT_EQ(EventBody(kEventAborted, AbortedDetail("via kite rm")),
            "Job was aborted.\n\tvia kite rm");
}

}  // namespace
}  // namespace kite::agent
