// The agent's side of the personal pool (docs/pool.md): the startds' connections, the collector
// of their slot ads (agent/collector.h), the negotiation pass over it (agent/negotiation.h) and
// the runs: which startd holds each, its lease, its outcome. What moves
// for a run (input, output, checkpoints, remote I/O) is its shadow's (agent/shadow.h), which
// rides on whichever startd's connection the pool gives it.
//
// Write ahead, then act (docs/architecture.md): a job is marked Running with its run id
// (PoolRunId) and slot (RemoteHost) and committed before its activate is sent; a run's outcome is
// committed before the startd is told it may forget the run (ack). A startd that goes away leaves
// its runs leased for JobLeaseDuration (HTCondor's job lease): a startd that comes back within it
// (after a network cut, or an agent restart) names the runs it still has and they go on; the
// others return to Idle when their lease ends.
//
// Used only on the agent's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/collector.h"
#include "agent/negotiation.h"
#include "agent/negotiator.h"
#include "agent/pool_authority.h"
#include "agent/pool_settings.h"
#include "agent/queue.h"
#include "agent/shadow.h"
#include "common/accept_loop.h"
#include "pool/protocol.h"
#include "pool/stream.h"

namespace kite::agent {

// Who is at the other end of a startd's connection, as its door established it.
struct PoolPeer {
  std::string who;  // for logs: "this user", or the TLS identity and address
  PoolDoor door = PoolDoor::kLocal;
  double not_after = 0;  // TLS: when the chain it presented lapses (0: never, the local door)
};

class Pool {
 public:
  struct Hooks {
    std::function<void()> commit_soon;  // changes are pending: commit them within commit_delay
    std::function<void(Job&)> retire;   // a job is Completed or Removed: it leaves the queue
  };
  // `authority` decides which startds are let in (docs/pool.md, "Trust"); it outlives the pool.
  // `spool`: the agent's spool folder (checkpoints are kept under it).
  Pool(boost::asio::io_context& io, JobQueue& queue, const PoolSettings& settings,
       std::string spool, PoolAuthority& authority, Hooks hooks);
  ~Pool();

  // Listens for startds on the Unix socket `path` (this user's own).
  Status Listen(const std::string& path);
  void Close();
  // A startd's connection, past its door (`peer` says which and who). It is let in only with a
  // pool credential in its hello, and only while that credential and its TLS identity hold.
  void Adopt(std::unique_ptr<pool::ByteStream> stream, PoolPeer peer);

  // The queue's status hook, for vanilla jobs: idle ones are matched, removed or held running
  // ones are vacated.
  void OnStatus(Job& job, bool leaving);
  // The queue's status hook, for glide-ins' grid jobs: one removed, held, ended or leaving takes
  // its credential's validity with it, and its startd is shown out now.
  void OnGlideinStatus(const Job& job, bool leaving);
  // Every startd's credential checked again now (one was revoked): those it no longer lets in go.
  void RecheckAdmissions();
  // After a restart: every job the queue says runs in the pool keeps its run for a lease, waiting
  // for its startd to reconnect.
  void Recover();
  // After each commit: what waited for it is sent (activates, acks).
  void OnFlushed();

  struct SlotView {
    const classad::ClassAd* ad;
    std::optional<JobKey> job;  // the job running there
    bool local = false;         // offered through the local socket (this desktop's own)
  };
  std::vector<SlotView> Slots() const;
  size_t idle_jobs() const { return idle_.size(); }
  // The local startd (a child of the agent) named `name` ended: its runs are lost now, not when
  // their lease ends.
  void StartdDied(const std::string& name);
  // Whether any run the agent knows is on a slot of the startd named `name`.
  bool HasRunsOn(const std::string& name) const;
  // Whether the job has a run in the pool (a removed one then leaves once the run is stopped).
  bool HasRun(const Job& job) const;
  // condor_vacate_job: the job's run is stopped where it runs and the job goes back to Idle, to
  // match again. Fails for a job that is not a vanilla job running in the pool.
  Status VacateJob(Job& job, const std::string& reason);
  // `kite checkpoint`: a running job with transparent checkpoints takes one now and goes on
  // (docs/checkpoints.md).
  Status CheckpointJob(Job& job);

 private:
  struct Startd;
  struct Run;
  using Socket = boost::asio::local::stream_protocol::socket;

  void Accept(Socket socket);
  void OnFrame(const std::shared_ptr<Startd>& sd, pool::Frame frame);
  void OnHello(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  void OnSlot(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  void OnStarted(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  void OnOutput(const std::shared_ptr<Startd>& sd, const pool::Message& m, const std::string& body);
  void OnRsc(const std::shared_ptr<Startd>& sd, const pool::Message& m, const std::string& body);
  void OnEnded(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  void OnCheckpointed(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  void OnNotCheckpointed(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  struct CheckpointAck;
  void CheckpointCommitted(const CheckpointAck& a);
  void OnVacated(const std::shared_ptr<Startd>& sd, const pool::Message& m, bool refused);
  void OnSuspension(const std::shared_ptr<Startd>& sd, const pool::Message& m);
  // Trust (docs/pool.md): "" while `sd` may go on offering slots, else why not; checked on every
  // frame it sends and before any work is sent to it.
  std::string Refusal(const Startd& sd) const;
  // Whether the proxy `sd` presented (TLS) has expired since its handshake.
  bool ProxyLapsed(const Startd& sd) const;
  // True while `sd` may stay; otherwise it is shown out (Expel) and false.
  bool Admitted(const std::shared_ptr<Startd>& sd);
  GlideinJobView GlideinView(const std::string& job) const;
  // Shows a startd out with `why`: told (`refuse`, after which a startd exits) when its
  // credential is at fault, and its runs then lost; only disconnected when its TLS identity
  // lapsed (it dials again with a renewed proxy; its runs wait under their lease).
  void Expel(const std::shared_ptr<Startd>& sd, const std::string& why, bool credential);
  // A welcomed startd silent for its silence limit is gone (pool.cpp, kSilenceMin).
  void WatchSilence(const std::shared_ptr<Startd>& sd);
  void HeedUpdateInterval(Startd& sd, const classad::ClassAd& slot);
  // The slot ad as the pool keeps it: what the startd said, with what the agent knows better
  // (StartdName, Name, FileSystemDomain, GlideinResource, AuthenticatedIdentity) set by it.
  void Stamp(const Startd& sd, const std::string& slot, classad::ClassAd& ad) const;
  // A message about a run that `sd` does not hold: refused, and logged (not every one).
  void Refused(const std::shared_ptr<Startd>& sd, const pool::Message& m, const std::string& why);
  // The connection is over; `for_good`: the startd said goodbye (it will not come back).
  void OnGone(const std::shared_ptr<Startd>& sd, const std::string& why, bool for_good = false);

  void Send(const std::shared_ptr<Startd>& sd, const pool::Message& m, std::string_view body = {});
  void SettleLost(const std::string& id, const std::string& why, double wall);
  void LoseRun(const std::string& id, const std::string& why);
  void EndRemote(Job& job, double wall);
  static std::string SlotHost(const std::string& slot);
  void NegotiateSoon();
  void Negotiate();
  std::unique_ptr<NegotiationPass> MakePass();
  void StartRun(Job& job, const Collector<Startd>::Slot& slot);
  void SendActivate(Run& run);
  // The directory a run of `j` on `slot` of `sd` runs in place (the job's Iwd), or "" when it
  // runs in a sandbox (docs/pool.md, "A shared file system").
  std::string InPlaceDir(const Job& j, const Startd& sd, const std::string& slot) const;
  void PumpInputs(const std::shared_ptr<Startd>& sd);
  void Vacate(Run& run, const std::string& reason);
  void VacateStopped();
  // Ends run `id` (slot freed, maps cleared). The job's record is the caller's.
  void DropRun(const std::string& id);
  // The run `m` names, only when its job matches and `sd` holds it (the connection that started
  // it, or that named it in its hello after a reconnect); nullptr otherwise.
  // `foreign` (when given) tells a run that exists but is not `sd`'s from one that does not.
  Run* FindRun(const std::shared_ptr<Startd>& sd, const pool::Message& m, bool* foreign = nullptr);
  bool IsCurrent(const Run& run) const;
  void ArmLeases();
  void ExpireLeases();

  boost::asio::io_context& io_;
  JobQueue& queue_;
  const PoolSettings& settings_;
  ShadowShared shadows_;  // what the runs' shadows share
  PoolAuthority& authority_;
  Hooks hooks_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<AcceptLoop<boost::asio::local::stream_protocol>> loop_;
  std::string path_;
  std::set<std::shared_ptr<Startd>> startds_;
  std::map<std::string, Run> runs_;             // by run id
  std::map<JobKey, std::string> run_of_;        // job -> its run id
  std::set<std::pair<JobOrder, JobKey>> idle_;  // idle vanilla jobs, in the order they match
  std::map<JobKey, JobOrder> idle_order_;
  std::set<JobKey> to_vacate_;             // removed or held with a run: vacated on the next turn
  std::vector<std::string> after_commit_;  // run ids whose activate waits for a commit
  struct Ack {
    std::weak_ptr<Startd> startd;
    std::string job, run;
  };
  std::vector<Ack> acks_;  // runs whose outcome waits for a commit before the startd may forget
  struct CheckpointAck {
    std::weak_ptr<Startd> startd;
    std::string job, run;
    JobKey key;
    int number = 0;  // the committed checkpoint (0: none)
  };
  std::vector<CheckpointAck> checkpoint_acks_;  // stored checkpoints whose commit is pending
  std::vector<JobKey> gone_checkpoints_;        // of jobs whose leaving is being committed
  bool negotiate_posted_ = false;
  boost::asio::steady_timer lease_timer_;
  bool lease_armed_ = false;
  boost::asio::steady_timer cool_timer_;   // the latest slot cool-off's end: negotiate again
  Collector<Startd> collector_;            // the startds' slots
  std::unique_ptr<NegotiationPass> pass_;  // after collector_, the source it asks for slots
};

}  // namespace kite::agent
