// The user-log reader behind `kite wait LOGFILE`: whole entries only, partial ones left for the
// next read, logs Kite writes read back, non-logs refused by line; condor_wait's bookkeeping.
#include "agent/userlog_reader.h"

#include <gtest/gtest.h>

#include "agent/userlog.h"

namespace kite::agent {
namespace {

using namespace std::string_literals;

constexpr std::string_view kLog =
    "000 (012.000.000) 2026-11-25 10:00:00 Job submitted from host: <127.0.0.1:0>\n"
    "...\n"
    "001 (012.000.000) 2026-11-25 10:00:01 Job executing on host: <127.0.0.1:0>\n"
    "...\n"
    "005 (012.000.000) 2026-11-25 10:00:02 Job terminated.\n"
    "\t(1) Normal termination (return value 0)\n"
    "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
    "...\n";

TEST(UserLogReader, ReadsWholeEntries) {
  auto r = ParseUserLog(kLog);
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->consumed, kLog.size());
  EXPECT_EQ(r->lines, 8u);
  auto& t = r->events[2];
  EXPECT_EQ(t.code, 5);
  EXPECT_EQ(t.cluster, 12);
  EXPECT_EQ(t.proc, 0);
  EXPECT_EQ(t.subproc, 0);
  EXPECT_EQ(t.time, "2026-11-25 10:00:02");
  EXPECT_EQ(t.headline, "Job terminated.");
  EXPECT_EQ(t.text, kLog.substr(kLog.find("005 (")));
  EXPECT_EQ(r->events[0].headline, "Job submitted from host: <127.0.0.1:0>");
}

// A writer appends each entry whole, but a reader may see any prefix of it: every prefix of a
// log gives exactly the entries that are complete in it, and consumes nothing of the rest.
TEST(UserLogReader, EveryPrefixGivesOnlyCompleteEntries) {
  const size_t ends[] = {kLog.find("001 ("), kLog.find("005 ("), kLog.size()};
  for (size_t n = 0; n <= kLog.size(); ++n) {
    auto r = ParseUserLog(kLog.substr(0, n));
    ASSERT_TRUE(r) << n << ": " << r.error().ToString();
    size_t complete = 0;
    for (size_t e : ends) complete += e <= n;
    EXPECT_EQ(r->events.size(), complete) << "prefix of " << n << " bytes";
    EXPECT_EQ(r->consumed, complete ? ends[complete - 1] : 0) << n;
  }
}

TEST(UserLogReader, TerminatorWithoutNewlineIsNotYetComplete) {
  std::string log = "005 (001.000.000) 2026-11-25 10:00:02 Job terminated.\n...";
  auto r = ParseUserLog(log);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->events.empty());
  EXPECT_EQ(r->consumed, 0u);
  r = ParseUserLog(log + "\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->events.size(), 1u);
}

// Reading on from where the last read stopped gives the same events as reading all at once.
TEST(UserLogReader, ResumesAtConsumed) {
  std::string log(kLog);
  auto first = ParseUserLog(std::string_view(log).substr(0, 100));
  ASSERT_TRUE(first);
  auto rest = ParseUserLog(std::string_view(log).substr(first->consumed), first->lines + 1);
  ASSERT_TRUE(rest);
  EXPECT_EQ(first->events.size() + rest->events.size(), 3u);
  EXPECT_EQ(first->consumed + rest->consumed, log.size());
}

TEST(UserLogReader, ReadsWhatKiteWrites) {
  ExecStatus st;
  st.code = 3;
  std::string log =
      FormatEvent(kEventSubmit, 7, 2, 1.8e9, EventBody(kEventSubmit, SubmitDetail("<h>"))) +
      FormatEvent(kEventHeld, 7, 2, 1.8e9, EventBody(kEventHeld, HeldDetail("disk full", 3, 0))) +
      FormatEvent(kEventTerminated, 7, 2, 1.8e9, EventBody(kEventTerminated, TerminatedDetail(st)));
  auto r = ParseUserLog(log);
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->events[1].code, kEventHeld);
  EXPECT_EQ(r->events[1].headline, "Job was held.");
  EXPECT_EQ(r->events[2].cluster, 7);
  EXPECT_EQ(r->events[2].proc, 2);
  EXPECT_EQ(r->consumed, log.size());
}

// A reason of several lines (kite hold -reason with newlines) stays inside its entry.
TEST(UserLogReader, ReasonsWithNewlinesStayInTheirEntry) {
  std::string reason = "a\n...\n005 (009.000.000) 2026-11-25 10:00:00 Job terminated.\r\nb";
  std::string log =
      FormatEvent(kEventHeld, 9, 0, 1.8e9, EventBody(kEventHeld, HeldDetail(reason, 1, 0))) +
      FormatEvent(kEventAborted, 9, 0, 1.8e9, EventBody(kEventAborted, AbortedDetail(reason))) +
      FormatEvent(kEventReleased, 9, 0, 1.8e9, EventBody(kEventReleased, ReleasedDetail(reason)));
  auto r = ParseUserLog(log);
  ASSERT_TRUE(r) << r.error().ToString() << "\n" << log;
  ASSERT_EQ(r->events.size(), 3u) << log;
  EXPECT_EQ(r->events[0].code, kEventHeld);
  EXPECT_EQ(r->events[1].code, kEventAborted);
  EXPECT_EQ(r->events[2].code, kEventReleased);
  EXPECT_NE(log.find("Job was held.\n\ta\n\t...\n\t005 (009"), std::string::npos) << log;
}

TEST(UserLogReader, AcceptsHtcondorsOlderDatesCrlfAndBlankLines) {
  auto r = ParseUserLog(
      "000 (1234567.010.000) 11/25 10:00:00 Job submitted from host: <10.0.0.1:9618>\r\n...\r\n"
      "\n"
      "009 (1234567.010.000) 11/25 10:00:05.123 Job was aborted.\n\tvia condor_rm\n...\n");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].cluster, 1234567);
  EXPECT_EQ(r->events[0].proc, 10);
  EXPECT_EQ(r->events[0].time, "11/25 10:00:00");
  EXPECT_EQ(r->events[1].code, 9);
}

// An entry whose writer died before its "..." is followed by the next writer's entry: its
// header is whole, so it counts; the entry after it is read normally.
TEST(UserLogReader, EntryCutShortByTheNextOneIsKept) {
  auto r = ParseUserLog(
      "005 (001.000.000) 2026-11-25 10:00:02 Job terminated.\n\t(1) Normal term\n"
      "005 (001.001.000) 2026-11-25 10:00:03 Job terminated.\n...\n");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].proc, 0);
  EXPECT_EQ(r->events[0].text,
            "005 (001.000.000) 2026-11-25 10:00:02 Job terminated.\n\t(1) Normal term\n");
  EXPECT_EQ(r->events[1].proc, 1);
}

TEST(UserLogReader, RefusesWhatIsNotALogByLine) {
  struct Case {
    std::string text;
    const char* error;
  } cases[] = {
      {"universe = local\nexecutable = /bin/true\nqueue\n", "line 1: not a user log event"},
      {"000 (001.000.000) 2026-11-25 10:00:00 Job submitted\n...\ngarbage\n",
       "line 3: not a user log event"},
      {"<?xml version=\"1.0\"?>\n<c>\n", "line 1: an XML user log"},
      {"000 (001.000.000) 2026-11-25 10:00:00 ok\n...\n\t(1) body outside an entry\n",
       "line 3: not a user log event"},
      {"000 (001.000.000) 2026-11-25 10:00:00 ok\n\0\n...\n"s, "line 2: a NUL"},
      {"00 (001.000.000) 2026-11-25 10:00:00 x\n", "line 1:"},
      {"0000 (001.000.000) 2026-11-25 10:00:00 x\n", "line 1:"},
      {"000 (1234567890.000.000) 2026-11-25 10:00:00 x\n", "line 1:"},  // above an int's range
      {"000 (001.000) 2026-11-25 10:00:00 x\n", "line 1:"},
      {"000 (001.000.000)2026-11-25 10:00:00 x\n", "line 1:"},
      {"000 (001.000.000) 10:00:00 x\n", "line 1:"},
      {"000 (001.000.000) 2026-11-25\n", "line 1:"},
      {"000 (-01.000.000) 2026-11-25 10:00:00 x\n", "line 1:"},
      {"...\n", "line 1:"},
  };
  for (auto& c : cases) {
    auto r = ParseUserLog(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message().find(c.error), std::string::npos)
        << c.text << ": " << r.error().message();
  }
  // Lines are numbered from where the reader resumed.
  auto r = ParseUserLog("junk\n", 41);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("line 41:"), std::string::npos) << r.error().message();
  // A bad line not yet complete is not judged yet: it may still become a header.
  EXPECT_TRUE(ParseUserLog("000 (00"));
}

UserLogEvent Ev(int code, int cluster, int proc) {
  UserLogEvent e;
  e.code = code;
  e.cluster = cluster;
  e.proc = proc;
  return e;
}

TEST(LogWait, AllJobsInTheLog) {
  LogWait w({});
  EXPECT_FALSE(w.Done());  // no job known yet: nothing to be done with
  w.Add(Ev(kEventSubmit, 3, 0));
  w.Add(Ev(kEventSubmit, 3, 1));
  w.Add(Ev(kEventExecute, 3, 0));
  w.Add(Ev(kEventTerminated, 3, 0));
  EXPECT_FALSE(w.Done());
  EXPECT_EQ(w.Pending(), "3.1");
  w.Add(Ev(kEventHeld, 3, 1));
  EXPECT_EQ(w.held(), 1u);
  EXPECT_FALSE(w.Done());  // held jobs may be released: still waited for
  w.Add(Ev(kEventAborted, 3, 1));
  EXPECT_TRUE(w.Done());
  EXPECT_EQ(w.ended(), 2u);
  // A job submitted later to the same log is waited for too.
  w.Add(Ev(kEventSubmit, 4, 0));
  EXPECT_FALSE(w.Done());
  // Events after a job's end do not count it twice.
  w.Add(Ev(kEventTerminated, 3, 0));
  EXPECT_EQ(w.ended(), 2u);
}

TEST(LogWait, ClusterOrJobFilter) {
  struct Case {
    LogWaitOptions options;
    size_t known;
    bool done;
  } cases[] = {
      {{3, -1, 0}, 2, false},  // 3.0 ended, 3.1 not
      {{3, 0, 0}, 1, true},    {{3, 1, 0}, 1, false},
      {{4, -1, 0}, 1, true},   {{5, -1, 0}, 0, false},  // not in the log
      {{-1, -1, 2}, 3, true},                           // -num 2: two ended
      {{-1, -1, 3}, 3, false}, {{3, -1, 2}, 2, false},
  };
  for (auto& c : cases) {
    LogWait w(c.options);
    for (auto e : {Ev(kEventSubmit, 3, 0), Ev(kEventSubmit, 3, 1), Ev(kEventSubmit, 4, 0),
                   Ev(kEventTerminated, 3, 0), Ev(kEventAborted, 4, 0)})
      w.Add(e);
    EXPECT_EQ(w.known(), c.known) << c.options.cluster << "." << c.options.proc;
    EXPECT_EQ(w.Done(), c.done) << c.options.cluster << "." << c.options.proc << " num "
                                << c.options.num;
  }
}

TEST(LogWait, PendingIsBounded) {
  LogWait w({});
  for (int p = 0; p < 5; ++p) w.Add(Ev(kEventSubmit, 1, p));
  EXPECT_EQ(w.Pending(3), "1.0 1.1 1.2 ...");
}

}  // namespace
}  // namespace kite::agent
