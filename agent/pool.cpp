// The agent's side of the personal pool: connections, collector, negotiation, runs.
#include "agent/pool.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <deque>
#include <filesystem>

#include "agent/policy.h"
#include "agent/userlog.h"
#include "classad/io.h"
#include "common/clock.h"
#include "common/strings.h"
#include "common/unix_socket_path.h"
#include "pool/link.h"

namespace kite::agent {

namespace {

namespace fs = std::filesystem;
using pool::Message;
using pool::MsgType;

// What a startd may have queued towards it before more input is read from disk.
constexpr size_t kOutboxHigh = 4 * pool::kChunk;
// Seconds a new connection has to say its hello.
constexpr double kHelloTimeout = 30;
// A welcomed startd sends its slot ads every UpdateInterval seconds (10 by default); one not heard
// from for 4 of them (at least kSilenceMin, at most kSilenceMax seconds) is taken for gone, as a
// dropped connection is: its runs wait under their lease. A network that drops a connection
// without a word (a NAT's timeout, a cut cable) is noticed so, not after TCP's 15 minutes.
constexpr double kSilenceMin = 5;
constexpr double kSilenceMax = 1200;
constexpr double kSilenceDefault = 40;
// How long a slot that refused a job is not offered another.
constexpr double kRefusedCoolOff = 5;
constexpr double kNegotiationSlice = 0.01;  // seconds of matchmaking before the agent's other work
// HTCondor's default JobLeaseDuration.
constexpr double kDefaultLease = 2400;
// Runs lost one after another before their program started: the job is held at this many.
constexpr int64_t kMaxStartFailures = 5;
constexpr const char* kStartFailures = "NumStartFailures";
double LeaseOf(const Job& j) {
  return j.ad.EvaluateReal("JobLeaseDuration").value_or(kDefaultLease);
}

}  // namespace

struct Pool::Startd : RunLink {
  Startd(PoolPeer p, boost::asio::io_context& io) : peer(std::move(p)), hello_timer(io) {}
  void Send(const Message& m, std::string_view body) override {
    if (!closed) link->Send(m, body);
  }
  size_t queued_bytes() const override { return link->queued_bytes(); }
  std::shared_ptr<pool::Link> link;                  // its connection, as frames
  PoolPeer peer;                                     // who is at the other end, through which door
  std::optional<pool::CredentialClaims> credential;  // what let it in (set at its hello)
  uint64_t refused = 0;                              // its messages about runs it does not hold
  bool expelled = false;                  // refused after its hello: nothing more it says counts
  boost::asio::steady_timer hello_timer;  // its hello must come within kHelloTimeout; then,
                                          // its silence must not last `silence_limit`
  double silence_limit = kSilenceDefault;
  bool welcomed = false, closed = false;
  std::string name;
  std::vector<std::string> slots;
  std::deque<std::string> pumping;  // run ids whose input is being sent, in order
};

struct Pool::Run {
  Run(ShadowShared& shared, const std::string& run, JobKey key)
      : id(run), job(key), shadow(shared, run, key) {}
  std::string id;
  JobKey job;
  std::string slot;
  std::weak_ptr<Startd> startd;
  enum class State { kCommitting, kSending, kRunning } state = State::kCommitting;
  double lease_until = 0;  // 0: its startd is connected
  bool vacating = false;
  bool started = false;  // the startd said the program runs (or it ran before a restart)
  Shadow shadow;         // its input, output, checkpoints and remote I/O
};

Pool::Pool(boost::asio::io_context& io, JobQueue& queue, const PoolSettings& settings,
           std::string spool, PoolAuthority& authority, Hooks hooks)
    : io_(io),
      queue_(queue),
      settings_(settings),
      shadows_{.queue = queue,
               .checkpoints = spool + "/checkpoints",
               .local_restore_site_checkpoints = settings.local_restore_site_checkpoints},
      authority_(authority),
      hooks_(std::move(hooks)),
      acceptor_(io),
      lease_timer_(io),
      cool_timer_(io),
      // A startd's trust is looked at once per slice; one that lapsed gets no work and is shown
      // out once the slice is over (Negotiate).
      collector_([&queue] { return queue.Now(); },
                 [this](const Startd& sd) {
                   return !sd.closed && !ProxyLapsed(sd) && Refusal(sd).empty();
                 }),
      pass_(MakePass()) {
  // Remote I/O may hold half of the agent's descriptors; the rest are the agent's own work's.
  rlimit lim{};
  size_t limit = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                     ? static_cast<size_t>(lim.rlim_cur)
                     : 65536;
  shadows_.remote_open_max = std::max<size_t>(64, limit / 2);
}

Pool::~Pool() = default;

Status Pool::Listen(const std::string& path) {
  path_ = path;
  if (auto st = ListenPrivate(acceptor_, path, 64); !st) return st;
  loop_ = std::make_shared<AcceptLoop<boost::asio::local::stream_protocol>>(
      acceptor_, "agent: pool", AcceptLoop<boost::asio::local::stream_protocol>::Limits{},
      [this](Socket s, PeerLimit::Slot) { Accept(std::move(s)); });
  loop_->Start();
  return {};
}

void Pool::Close() {
  if (loop_) loop_->Stop();
  boost::system::error_code ec;
  acceptor_.close(ec);
  for (const auto& sd : startds_) sd->link->Close();
  if (!path_.empty()) ::unlink(path_.c_str());
}

// Only this user's own processes may offer slots on the Unix socket.
void Pool::Accept(Socket socket) {
  ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      cred.uid != ::geteuid()) {
    spdlog::warn("agent: pool: refused a startd of uid {} on {} (not this user)", cred.uid, path_);
    return;
  }
  Adopt(std::unique_ptr<pool::ByteStream>(new pool::AsioByteStream<Socket>(std::move(socket))),
        PoolPeer{.who = "this user", .door = PoolDoor::kLocal});
}

void Pool::Adopt(std::unique_ptr<pool::ByteStream> stream, PoolPeer peer) {
  auto sd = std::make_shared<Startd>(std::move(peer), io_);
  std::weak_ptr<Startd> weak = sd;
  sd->link = std::make_shared<pool::Link>(std::move(stream),
                                          pool::Link::Handlers{.frame =
                                                                   [this, weak](pool::Frame f) {
                                                                     if (auto s = weak.lock())
                                                                       OnFrame(s, std::move(f));
                                                                   },
                                                               .closed =
                                                                   [this, weak](const Error& e) {
                                                                     if (auto s = weak.lock())
                                                                       OnGone(s, e.message());
                                                                   },
                                                               .sent =
                                                                   [this, weak] {
                                                                     if (auto s = weak.lock())
                                                                       PumpInputs(s);
                                                                   }},
                                          "the startd");
  startds_.insert(sd);
  // A connection that says no hello in time holds nothing for long.
  sd->hello_timer.expires_after(std::chrono::seconds(static_cast<int64_t>(kHelloTimeout)));
  sd->hello_timer.async_wait([this, weak = std::weak_ptr<Startd>(sd)](auto ec) {
    auto s = weak.lock();
    if (ec || !s || s->closed) return;
    if (!s->welcomed) {
      OnGone(s, "no hello within " + std::to_string(static_cast<int>(kHelloTimeout)) + " s");
    } else {
      WatchSilence(s);
    }
  });
  sd->link->Start();
}

// From its slot ads: 4 of its UpdateIntervals, within [kSilenceMin, kSilenceMax].
void Pool::HeedUpdateInterval(Startd& sd, const classad::ClassAd& slot) {
  auto every = slot.EvaluateReal("UpdateInterval");
  if (!every || !(*every > 0)) return;
  sd.silence_limit = std::clamp(4 * *every, kSilenceMin, kSilenceMax);
}

void Pool::WatchSilence(const std::shared_ptr<Startd>& sd) {
  double quiet = SteadyNow() - sd->link->heard_at();
  if (quiet >= sd->silence_limit) {
    char why[96];
    std::snprintf(why, sizeof why, "silent for %.0f s (no slot ad for 4 of its UpdateIntervals)",
                  quiet);
    return OnGone(sd, why);
  }
  sd->hello_timer.expires_after(
      std::chrono::milliseconds(static_cast<int64_t>((sd->silence_limit - quiet) * 1000) + 1));
  sd->hello_timer.async_wait([this, weak = std::weak_ptr<Startd>(sd)](auto ec) {
    auto s = weak.lock();
    if (!ec && s && !s->closed) WatchSilence(s);
  });
}

void Pool::Send(const std::shared_ptr<Startd>& sd, const Message& m, std::string_view body) {
  sd->Send(m, body);
}

void Pool::OnFrame(const std::shared_ptr<Startd>& sd, pool::Frame f) {
  const Message& m = f.msg;
  if (sd->expelled) return;
  if (!sd->welcomed && m.type != MsgType::kHello)
    return OnGone(sd, "spoke before hello (" + std::string(pool::MsgTypeName(m.type)) + ")");
  // Trust is not decided once: a credential expires or is revoked, a proxy lapses, while the
  // connection lives. Nothing a startd says counts once it may no longer be here.
  if (sd->welcomed && !Admitted(sd)) return;
  switch (m.type) {
    case MsgType::kHello:
      return OnHello(sd, m);
    case MsgType::kSlot:
      return OnSlot(sd, m);
    case MsgType::kStarted:
      return OnStarted(sd, m);
    case MsgType::kOutput:
      return OnOutput(sd, m, f.body);
    case MsgType::kCheckpointed:
      return OnCheckpointed(sd, m);
    case MsgType::kNotCheckpointed:
      return OnNotCheckpointed(sd, m);
    case MsgType::kEnded:
      return OnEnded(sd, m);
    case MsgType::kVacated:
      return OnVacated(sd, m, false);
    case MsgType::kRefused:
      return OnVacated(sd, m, true);
    case MsgType::kSuspended:
    case MsgType::kContinued:
      return OnSuspension(sd, m);
    case MsgType::kRsc:
      return OnRsc(sd, m, f.body);
    case MsgType::kBye:
      return OnGone(sd, "leaving: " + m.reason, /*for_good=*/true);
    default:
      return OnGone(sd, "sent " + std::string(pool::MsgTypeName(m.type)) +
                            ", which a startd never sends to the agent");
  }
}

void Pool::OnHello(const std::shared_ptr<Startd>& sd, const Message& m) {
  auto refuse = [&](const std::string& why) {
    spdlog::warn("agent: pool: refused startd '{}' ({}): {}", ForLog(m.name, 128), sd->peer.who,
                 why);
    Message r{.type = MsgType::kRefuse, .reason = why};
    Send(sd, r);
    sd->welcomed = false;
    // The refusal is written before the connection closes.
    boost::asio::post(io_, [this, sd] { OnGone(sd, "refused"); });
  };
  if (sd->welcomed) return refuse("a second hello");
  if (m.version != pool::kProtocolVersion)
    return refuse("pool protocol version " + std::to_string(m.version) + " (this agent speaks " +
                  std::to_string(pool::kProtocolVersion) + ")");
  // Its credential, before anything it offers is looked at (docs/pool.md, "Trust").
  if (m.credential.empty())
    return refuse(
        "it presented no pool credential (a startd needs one this agent issued: glide-ins get "
        "theirs from kite glidein submit, other startds from kite pool credential create)");
  auto claims = authority_.Verify(m.credential);
  if (!claims) return refuse(claims.error().message());
  sd->credential = *claims;
  if (std::string why = Refusal(*sd); !why.empty()) return refuse(why);
  if (m.name != claims->name)
    return refuse("it calls itself '" + ForLog(m.name, 128) + "' but its credential is for '" +
                  claims->name + "'");
  if (m.slots.empty()) return refuse("it offers no slot");
  std::vector<classad::ClassAd> ads;
  std::set<std::string> names;
  for (const auto& s : m.slots) {
    if (!SlotAllowed(*claims, s.name) || !names.insert(s.name).second)
      return refuse("slot '" + ForLog(s.name, 160) + "' is not one its credential allows (slot1@" +
                    claims->name + " to slot" + std::to_string(claims->slots) + "@" + claims->name +
                    ", each once)");
    auto ad = classad::ParseNewAd(s.ad);
    if (!ad) return refuse("slot " + s.name + ": its ad does not parse: " + ad.error().message());
    Stamp(*sd, s.name, *ad);
    HeedUpdateInterval(*sd, *ad);
    ads.push_back(std::move(*ad));
  }
  // A startd that reconnects replaces its old connection (which may not have noticed yet): one
  // with a credential of the same kind for the same name. Another kind never takes a name's place.
  for (const auto& other : std::vector<std::shared_ptr<Startd>>(startds_.begin(), startds_.end())) {
    if (other == sd || !other->welcomed || other->name != m.name) continue;
    if (!other->credential || other->credential->kind != claims->kind)
      return refuse("a startd named '" + m.name + "' of another kind is in the pool already");
  }
  for (const auto& other : std::vector<std::shared_ptr<Startd>>(startds_.begin(), startds_.end())) {
    if (other != sd && other->welcomed && other->name == m.name) OnGone(other, "replaced");
  }
  sd->name = m.name;
  sd->welcomed = true;
  sd->slots.clear();
  std::vector<std::pair<std::string, classad::ClassAd>> offered;
  for (size_t i = 0; i < m.slots.size(); ++i) {
    offered.emplace_back(m.slots[i].name, std::move(ads[i]));
    sd->slots.push_back(m.slots[i].name);
  }
  collector_.Offer(sd, std::move(offered), sd->peer.door == PoolDoor::kTls);
  Send(sd, Message{.type = MsgType::kWelcome});
  WatchSilence(sd);  // in place of the hello's deadline
  // The runs it still has go on; a run we placed on one of its slots that it does not name is
  // lost. It may name only runs that were placed on its own slots, each on the slot it was.
  std::set<std::string> named;
  for (const auto& r : m.runs) {
    auto it = runs_.find(r.run);
    bool ours = it != runs_.end() && JobIdString(it->second.job) == r.job &&
                it->second.slot == r.slot &&
                std::find(sd->slots.begin(), sd->slots.end(), r.slot) != sd->slots.end();
    if (ours) {
      auto holder = it->second.startd.lock();
      ours = !holder || holder == sd;
    }
    if (!ours) {
      Send(sd, Message{.type = MsgType::kVacate,
                       .slot = r.slot,
                       .job = r.job,
                       .run = r.run,
                       .reason = "the agent does not know this run"});
      continue;
    }
    Run& run = it->second;
    if (Job* j = queue_.Find(run.job); j && run.lease_until > 0) {
      queue_.AddEvent(*j, kEventJobReconnected, EventBody(kEventJobReconnected, r.slot));
      hooks_.commit_soon();
    }
    run.startd = sd;
    run.lease_until = 0;
    run.state = Run::State::kRunning;
    collector_.Claim(r.slot, run.id);
    named.insert(run.id);
    // Removed or held while its startd was away (or the agent down): stopped now.
    if (Job* j = queue_.Find(run.job); j && !RunUnderWay(j->status)) {
      to_vacate_.insert(run.job);
      boost::asio::post(io_, [this] { VacateStopped(); });
    }
  }
  std::vector<std::string> lost;
  for (auto& [id, run] : runs_) {
    if (named.contains(id) || run.state == Run::State::kCommitting) continue;
    if (std::find(sd->slots.begin(), sd->slots.end(), run.slot) != sd->slots.end() &&
        run.lease_until > 0)
      lost.push_back(id);
  }
  for (const auto& id : lost) LoseRun(id, "its startd came back without it");
  spdlog::info("agent: pool: startd '{}' joined with {} slot(s), {} run(s) going on ({} {})",
               m.name, m.slots.size(), named.size(), pool::CredentialKindName(claims->kind),
               claims->id);
  NegotiateSoon();
}

// ---- trust (docs/pool.md, "Trust") ----

GlideinJobView Pool::GlideinView(const std::string& job) const {
  GlideinJobView v;
  auto key = ParseJobIdString(job);
  const Job* j = key ? queue_.Find(*key) : nullptr;
  if (!j) return v;
  v.found = true;
  v.is_glidein = j->universe == kUniverseGrid && j->ad.EvaluateBool("KiteGlidein").value_or(false);
  v.status = j->status;
  return v;
}

std::string Pool::Refusal(const Startd& sd) const {
  if (!sd.credential) return "it presented no pool credential";
  const auto& c = *sd.credential;
  return CredentialRefusal(
      c, sd.peer.door, authority_.Now(), authority_.IsRevoked(c.id),
      c.kind == pool::CredentialKind::kGlidein ? GlideinView(c.job) : GlideinJobView{});
}

bool Pool::ProxyLapsed(const Startd& sd) const {
  return sd.peer.not_after > 0 && authority_.Now() >= sd.peer.not_after;
}

bool Pool::Admitted(const std::shared_ptr<Startd>& sd) {
  if (sd->closed) return false;
  if (ProxyLapsed(*sd)) {
    Expel(sd, "the proxy it presented expired at " + FormatUtc(sd->peer.not_after),
          /*credential=*/false);
    return false;
  }
  if (std::string why = Refusal(*sd); !why.empty()) {
    Expel(sd, why, /*credential=*/true);
    return false;
  }
  return true;
}

void Pool::Expel(const std::shared_ptr<Startd>& sd, const std::string& why, bool credential) {
  if (sd->closed || sd->expelled) return;
  sd->expelled = true;
  spdlog::warn("agent: pool: showing startd '{}' ({}) out: {}", sd->name, sd->peer.who, why);
  if (!credential) return OnGone(sd, why);
  Send(sd, Message{.type = MsgType::kRefuse, .reason = why});
  sd->welcomed = false;
  // Its connection closes once the refusal is written; meanwhile nothing it sends counts.
  boost::asio::post(io_, [this, sd, why] { OnGone(sd, why, /*for_good=*/true); });
}

void Pool::Stamp(const Startd& sd, const std::string& slot, classad::ClassAd& ad) const {
  if (!sd.credential) return;
  const auto& c = *sd.credential;
  ad.Assign("Name", slot);
  ad.Assign("StartdName", c.name);
  if (c.kind == pool::CredentialKind::kLocal) return;
  // A site never shares the desktop's file system, whatever it says, and only the glide-in's
  // own grid job says where it runs.
  ad.Assign("FileSystemDomain", c.name);
  auto key = c.kind == pool::CredentialKind::kGlidein ? ParseJobIdString(c.job) : std::nullopt;
  const Job* glidein = key ? queue_.Find(*key) : nullptr;
  auto resource = glidein ? glidein->ad.EvaluateString("GlideinResource") : std::nullopt;
  if (resource) {
    ad.Assign("GlideinResource", *resource);
  } else {
    ad.Remove("GlideinResource");
  }
}

void Pool::Refused(const std::shared_ptr<Startd>& sd, const Message& m, const std::string& why) {
  // Logged the first 10 times, then at every power of two: a startd cannot flood the log.
  uint64_t n = ++sd->refused;
  if (n <= 10 || (n & (n - 1)) == 0) {
    spdlog::warn("agent: pool: refused {} from startd '{}' ({}) for job {} run {}: {} ({} so far)",
                 pool::MsgTypeName(m.type), sd->name, sd->peer.who, ForLog(m.job, 40),
                 ForLog(m.run, 80), why, n);
  }
}

void Pool::OnSlot(const std::shared_ptr<Startd>& sd, const Message& m) {
  auto ad = classad::ParseNewAd(m.ad);
  if (!ad) {
    spdlog::warn("agent: pool: startd '{}': slot {}: the new ad does not parse ({}); kept the old",
                 sd->name, ForLog(m.slot, 160), ad.error().message());
    return;
  }
  Stamp(*sd, m.slot, *ad);
  HeedUpdateInterval(*sd, *ad);  // its own silence limit, whichever slot it names
  if (!collector_.Update(*sd, m.slot, std::move(*ad))) {
    spdlog::warn("agent: pool: startd '{}' updated slot {}, which it did not offer", sd->name,
                 ForLog(m.slot, 160));
    return;
  }
  if (const auto* slot = collector_.Find(m.slot); slot && slot->run.empty()) NegotiateSoon();
}

void Pool::OnStarted(const std::shared_ptr<Startd>& sd, const Message& m) {
  Run* run = FindRun(sd, m);
  if (!run || run->started) return;
  run->started = true;
  Job* j = IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  if (!j) return;
  queue_.RecordProgramStart(*j, run->id);
  // Which way its remote I/O went (the startd may only name one of the two).
  if (!m.remote_io.empty() && j->ad.EvaluateBool("WantRemoteIO").value_or(false))
    queue_.SetAttr(*j, "RemoteIOMethod", classad::MakeString(m.remote_io));
  if (j->ad.EvaluateInt(kStartFailures).value_or(0) != 0)
    queue_.SetAttr(*j, kStartFailures, classad::MakeInteger(0));
  hooks_.commit_soon();
}

// Whether `run` is its job's run now: only that one may change the job.
bool Pool::IsCurrent(const Run& run) const {
  auto it = run_of_.find(run.job);
  return it != run_of_.end() && it->second == run.id;
}

// A remote system call of a running program (docs/remote-io.md): done here, as the user, inside
// the paths the job may use; the answer goes back on the same connection.
void Pool::OnRsc(const std::shared_ptr<Startd>& sd, const Message& m, const std::string& body) {
  Run* run = FindRun(sd, m);
  Job* j = run && IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  std::string reply;
  if (run) {
    int status = j ? j->status : 0;
    reply = run->shadow.RemoteCall(j, body);
    // Held: the program wrote where remote I/O cannot follow.
    if (j && j->status != status) hooks_.commit_soon();
  } else {
    spdlog::warn("agent: pool: job {} run {}: a remote system call refused: no such run",
                 ForLog(m.job, 40), ForLog(m.run, 80));
    reply = RefusedRemoteCall(body);
  }
  Send(sd, Message{.type = MsgType::kRscReply, .job = m.job, .run = m.run, .chan = m.chan}, reply);
}

Pool::Run* Pool::FindRun(const std::shared_ptr<Startd>& sd, const Message& m, bool* foreign) {
  auto it = runs_.find(m.run);
  if (it == runs_.end() || JobIdString(it->second.job) != m.job) return nullptr;
  if (it->second.startd.lock() != sd) {
    // Another startd's run (or one whose startd has not come back): a startd speaks only for the
    // runs it was given.
    if (foreign) *foreign = true;
    Refused(sd, m, "the run is not this startd's");
    return nullptr;
  }
  return &it->second;
}

void Pool::OnOutput(const std::shared_ptr<Startd>& sd, const Message& m, const std::string& body) {
  Run* run = FindRun(sd, m);
  Job* j = run ? queue_.Find(run->job) : nullptr;
  if (!j) return;
  if (m.checkpoint) {
    if (auto why = run->shadow.CheckpointPiece(*j, m, body); !why.empty()) Refused(sd, m, why);
    return;
  }
  // A run in place wrote its files where they belong: nothing may be written over them.
  if (!InPlaceDir(*j, *sd, run->slot).empty()) return;
  run->shadow.Output(*j, m, body);
}

// ---- checkpoints (docs/pool.md, "Checkpoints"; stored by the run's shadow) ----

void Pool::OnCheckpointed(const std::shared_ptr<Startd>& sd, const Message& m) {
  Run* run = FindRun(sd, m);
  if (!run || !IsCurrent(*run)) return;
  Job* j = queue_.Find(run->job);
  if (!j || (!RunUnderWay(j->status) && j->status != kHeld)) {
    // Removed meanwhile: nobody needs it, but the starter hears back so that it can end the run
    // (a transparent checkpoint taken for a vacate waits for this answer). A held job keeps it:
    // its release goes on from it.
    // Nothing is stored, so nothing waits for a commit (and none may come): answered now.
    run->shadow.DropIncomingCheckpoint();
    Send(sd, Message{.type = MsgType::kAck, .job = m.job, .run = m.run, .checkpoint = true});
    return;
  }
  if (!run->shadow.Policy(*j).checkpoints) {
    // Only the desktop decides which jobs have checkpoints: nothing is stored, and the run
    // (whose startd does what no Kite startd does) is stopped; the job matches again.
    Refused(sd, m, "the job takes no checkpoints");
    run->shadow.DropIncomingCheckpoint();
    Vacate(*run, "its startd sent a checkpoint for a job that takes none");
    return;
  }
  int n = run->shadow.StoreCheckpoint(*j, m, sd->name, sd->peer.door == PoolDoor::kTls);
  checkpoint_acks_.push_back({run->startd, m.job, m.run, run->job, n});
  hooks_.commit_soon();
}

// A transparent checkpoint asked for was not taken: the job says why (its ad, its user log and
// `kite q -analyze`); its program went on, or, being vacated, stops and resumes from its last
// stored checkpoint.
void Pool::OnNotCheckpointed(const std::shared_ptr<Startd>& sd, const Message& m) {
  Run* run = FindRun(sd, m);
  Job* j = run && IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  if (!j || !RunUnderWay(j->status)) return;
  // A startd's words: kept short, and the same refusal again within a minute (a site repeating
  // itself) adds nothing to the user log.
  std::string why = m.reason.empty() ? "(no reason given)" : m.reason.substr(0, 1024);
  if (j->ad.EvaluateString("LastCheckpointRefusal") == why &&
      queue_.Now() -
              static_cast<double>(j->ad.EvaluateInt("LastCheckpointRefusalTime").value_or(0)) <
          60)
    return;
  queue_.SetAttr(*j, "LastCheckpointRefusal", classad::MakeString(why));
  queue_.SetAttr(*j, "LastCheckpointRefusalTime",
                 classad::MakeInteger(static_cast<int64_t>(queue_.Now())));
  // The starter alone knows whether the run was also being stopped (its startd's policy can
  // vacate it too): both cases are said.
  int64_t stored = j->ad.EvaluateInt("NumCheckpoints").value_or(0);
  std::string next =
      "the program goes on; if it was being vacated, it stops all the same and " +
      (stored > 0 ? "resumes from its last stored checkpoint (" + std::to_string(stored) + ")"
                  : std::string("starts again from its beginning (it has no "
                                "stored checkpoint)"));
  queue_.AddEvent(*j, kEventGeneric, "Checkpoint not taken: " + why + "; " + next + ".");
  spdlog::info("agent: pool: job {}: checkpoint not taken: {}", m.job, why);
  hooks_.commit_soon();
}

// After the commit: checkpoints other than the committed one go, and the startd goes on.
void Pool::CheckpointCommitted(const CheckpointAck& a) {
  Shadow::KeepOnlyCheckpoint(shadows_, a.key, a.number);
  if (auto sd = a.startd.lock())
    Send(sd, Message{.type = MsgType::kAck, .job = a.job, .run = a.run, .checkpoint = true});
}

void Pool::OnEnded(const std::shared_ptr<Startd>& sd, const Message& m) {
  bool foreign = false;
  Run* run = FindRun(sd, m, &foreign);
  if (!run) {
    // A run we do not know (its outcome stored before a restart, or long lost): nothing to keep,
    // and the startd may forget it. Another startd's run is not this one's to end.
    if (!foreign && std::find(sd->slots.begin(), sd->slots.end(), m.slot) != sd->slots.end())
      Send(sd, Message{.type = MsgType::kAck, .job = m.job, .run = m.run});
    return;
  }
  Job* j = IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  if (j) {
    // Its `started` may have been lost with an agent that went away meanwhile.
    queue_.RecordProgramStart(*j, run->id);
    run->shadow.RecordIo(*j);
    const auto& u = m.usage;
    queue_.RecordUsage(*j, Usage{u.user_cpu, u.sys_cpu, u.rss_kb, u.rss_kb});
    // The run's wall clock counts once: MarkExited (for a removed job, or through EndRun) adds
    // it itself; a run whose end holds the job adds it here.
    bool exits =
        j->status == kRemoved || (RunUnderWay(j->status) && run->shadow.output_error().empty() &&
                                  m.exit.kind != pool::RunExit::Kind::kFailed);
    EndRemote(*j, exits || u.end <= u.start ? 0 : u.end - u.start);
    ExecStatus exit;
    exit.kind = m.exit.kind == pool::RunExit::Kind::kSignaled ? ExecStatus::Kind::kSignaled
                                                              : ExecStatus::Kind::kExited;
    exit.code = m.exit.code;
    exit.utime = u.user_cpu;
    exit.stime = u.sys_cpu;
    exit.start = u.start;
    exit.end = u.end;
    if (j->status == kRemoved) {
      queue_.MarkExited(*j, exit);
      hooks_.retire(*j);
    } else if (!RunUnderWay(j->status)) {
      // Held meanwhile: it stays held.
    } else if (!run->shadow.output_error().empty()) {
      (void)queue_.Hold(
          *j, "Error from " + run->slot + ": cannot write output: " + run->shadow.output_error(),
          kHoldTransferOutputError);
    } else if (m.exit.kind == pool::RunExit::Kind::kFailed) {
      (void)queue_.Hold(*j, "Error from " + run->slot + ": " + m.exit.message,
                        kHoldFailedToCreateProcess);
    } else if (EndRun(queue_, *j, exit)) {
      hooks_.retire(*j);
    }
  }
  // The slot is free for the next job now: its activate goes out in the same commit's wake,
  // right after the ack.
  acks_.push_back({run->startd, m.job, m.run});
  DropRun(run->id);
  NegotiateSoon();
  hooks_.commit_soon();
}

// The slot's owner policy suspended the run or let it go on. Said again after every reconnect,
// so a change made while the agent was away is learnt; a repeat changes nothing.
void Pool::OnSuspension(const std::shared_ptr<Startd>& sd, const Message& m) {
  Run* run = FindRun(sd, m);
  Job* j = run && IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  if (!j) return;
  if (m.type == MsgType::kSuspended && j->status == kRunning) {
    (void)queue_.Suspend(*j,
                         "Suspended by " + run->slot + (m.reason.empty() ? "" : ": " + m.reason));
  } else if (m.type == MsgType::kContinued && j->status == kSuspended) {
    (void)queue_.Continue(*j);
  } else {
    return;
  }
  hooks_.commit_soon();
}

// A run stopped before its end (vacated), or never started (refused): the job runs again.
void Pool::OnVacated(const std::shared_ptr<Startd>& sd, const Message& m, bool refused) {
  Run* run = FindRun(sd, m);
  if (!run) return;
  // A slot that refused a job, or stopped one on its own (its owner's policy, its startd
  // leaving), is not offered another for a while.
  if (refused || !run->vacating) {
    if (collector_.Find(run->slot)) {
      collector_.CoolOff(run->slot, kRefusedCoolOff);
      // Offered again when the cool-off is over, whether or not anything else happens by then.
      cool_timer_.expires_after(
          std::chrono::milliseconds(static_cast<int64_t>(kRefusedCoolOff * 1000) + 10));
      cool_timer_.async_wait([this](auto ec) {
        if (!ec) NegotiateSoon();
      });
    }
  }
  if (refused) spdlog::info("agent: pool: {} refused job {}: {}", run->slot, m.job, m.reason);
  std::string why = (refused ? "The job was refused by " : "The job was vacated from ") +
                    run->slot + (m.reason.empty() ? "" : ": " + m.reason);
  // A program that ran (its usage says when it started) counts as started, even if its
  // `started` was lost with an agent that went away meanwhile.
  Job* j = IsCurrent(*run) ? queue_.Find(run->job) : nullptr;
  if (j && !refused && m.usage.start > 0) queue_.RecordProgramStart(*j, run->id);
  SettleLost(run->id, why, m.usage.end > m.usage.start ? m.usage.end - m.usage.start : 0);
}

// Records a run that will not end on its own: Running jobs return to Idle, removed ones leave.
void Pool::SettleLost(const std::string& id, const std::string& why, double wall) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  Job* j = IsCurrent(it->second) ? queue_.Find(it->second.job) : nullptr;
  if (j) {
    it->second.shadow.RecordIo(*j);
    EndRemote(*j, wall);
    if (RunUnderWay(j->status)) {
      (void)queue_.SetIdle(*j, why);
    } else if (j->status == kRemoved) {
      hooks_.retire(*j);
    }
  }
  DropRun(id);
  hooks_.commit_soon();
  NegotiateSoon();
}

void Pool::LoseRun(const std::string& id, const std::string& why) {
  auto it = runs_.find(id);
  Job* j = it != runs_.end() && IsCurrent(it->second) ? queue_.Find(it->second.job) : nullptr;
  if (j && !it->second.started && RunUnderWay(j->status)) {
    // Lost before its program started: the same again and again (a start that always fails the
    // same way) holds the job with the reason instead of starting it for ever.
    int64_t failures = j->ad.EvaluateInt(kStartFailures).value_or(0) + 1;
    queue_.SetAttr(*j, kStartFailures, classad::MakeInteger(failures));
    if (failures >= kMaxStartFailures) {
      (void)queue_.Hold(*j,
                        "The job's run was lost " + std::to_string(failures) +
                            " times in a row before it started (last: " + why + ")",
                        kHoldFailedToCreateProcess);
      DropRun(id);
      hooks_.commit_soon();
      NegotiateSoon();
      return;
    }
  }
  SettleLost(id, "The job's run was lost (" + why + "); it runs again.", 0);
}

// The attributes of a run that is over: where it ran, for how long in all.
void Pool::EndRemote(Job& j, double wall) {
  if (auto host = j.ad.EvaluateString("RemoteHost"))
    queue_.SetAttr(j, "LastRemoteHost", classad::MakeString(*host));
  double total = j.ad.EvaluateReal("RemoteWallClockTime").value_or(0) + wall;
  queue_.SetAttr(j, "RemoteWallClockTime", classad::MakeReal(total));
  queue_.SetAttr(j, "RemoteHost", classad::MakeUndefined());
  queue_.SetAttr(j, "PoolRunId", classad::MakeUndefined());
}

void Pool::OnGone(const std::shared_ptr<Startd>& sd, const std::string& why, bool for_good) {
  if (sd->closed) return;
  sd->closed = true;
  sd->hello_timer.cancel();
  // An expelled startd hears its refusal before the hang-up (a TLS write still under way when
  // the connection closed lost it).
  if (sd->expelled) {
    sd->link->CloseWhenSent();
  } else {
    sd->link->Close();
  }
  startds_.erase(sd);
  if (!sd->name.empty())
    spdlog::info("agent: pool: startd '{}' left ({})", sd->name, why);
  else
    spdlog::warn("agent: pool: a startd was dropped before its hello: {}", why);
  collector_.Withdraw(*sd);
  // Runs it never started (its input unsent, or unfinished) are lost now, as are all of them
  // when it said goodbye; the others wait for it under their lease.
  double now = queue_.Now();
  std::vector<std::string> lost;
  for (auto& [id, run] : runs_) {
    if (run.startd.lock() != sd && !run.startd.expired()) continue;
    if (run.lease_until > 0) continue;
    if (for_good || run.state != Run::State::kRunning) {
      lost.push_back(id);
      continue;
    }
    Job* j = queue_.Find(run.job);
    run.lease_until = now + (j ? LeaseOf(*j) : kDefaultLease);
    if (j) {
      queue_.AddEvent(*j, kEventJobDisconnected,
                      EventBody(kEventJobDisconnected,
                                LinesDetail("Socket between submit and execute hosts closed "
                                            "unexpectedly\nTrying to reconnect to " +
                                            run.slot)));
      hooks_.commit_soon();
    }
  }
  for (const auto& id : lost) LoseRun(id, "its startd " + sd->name + " left (" + why + ")");
  ArmLeases();
}

void Pool::StartdDied(const std::string& name) {
  std::vector<std::string> lost;
  for (auto& [id, run] : runs_) {
    auto sd = run.startd.lock();
    if ((!sd || sd->name == name) && run.lease_until > 0 && SlotHost(run.slot) == name)
      lost.push_back(id);
  }
  for (const auto& id : lost) LoseRun(id, "its startd ended");
}

bool Pool::HasRunsOn(const std::string& name) const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [&](const auto& r) { return SlotHost(r.second.slot) == name; });
}

std::string Pool::SlotHost(const std::string& slot) {
  auto at = slot.find('@');
  return at == std::string::npos ? slot : slot.substr(at + 1);
}

void Pool::ArmLeases() {
  double next = 0;
  for (const auto& [id, run] : runs_) {
    if (run.lease_until > 0 && (next == 0 || run.lease_until < next)) next = run.lease_until;
  }
  if (next == 0) return;
  double in = std::max(0.0, next - queue_.Now());
  lease_timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(in * 1000) + 10));
  lease_timer_.async_wait([this](auto ec) {
    if (!ec) ExpireLeases();
  });
}

void Pool::ExpireLeases() {
  double now = queue_.Now();
  std::vector<std::string> lost;
  for (const auto& [id, run] : runs_) {
    if (run.lease_until > 0 && run.lease_until <= now) lost.push_back(id);
  }
  for (const auto& id : lost) {
    auto it = runs_.find(id);
    if (Job* j = queue_.Find(it->second.job)) {
      queue_.AddEvent(*j, kEventJobReconnectFailed,
                      EventBody(kEventJobReconnectFailed,
                                LinesDetail("Job disconnected too long: JobLeaseDuration (" +
                                            std::to_string(static_cast<int64_t>(LeaseOf(*j))) +
                                            " seconds) expired\nCan not reconnect to " +
                                            it->second.slot + ", rescheduling job")));
    }
    LoseRun(id, "its startd did not come back within the job's lease");
  }
  ArmLeases();
}

void Pool::OnStatus(Job& j, bool leaving) {
  auto idle = idle_order_.find(j.key);
  if (idle != idle_order_.end()) {
    idle_.erase({idle->second, j.key});
    idle_order_.erase(idle);
  }
  if (!leaving && j.status == kIdle) {
    JobOrder order{j.ad.EvaluateInt("JobPrio").value_or(0), j.key.cluster, j.key.proc};
    idle_order_[j.key] = order;
    idle_.insert({order, j.key});
    NegotiateSoon();
  } else if (leaving || j.status == kRemoved || j.status == kHeld) {
    // Its checkpoints (and any half-sent one) go once its leaving is committed.
    if (leaving && j.universe == kUniverseVanilla) gone_checkpoints_.push_back(j.key);
    // Stopped on a later turn: the caller may still be using the job.
    if (run_of_.contains(j.key)) {
      to_vacate_.insert(j.key);
      boost::asio::post(io_, [this] { VacateStopped(); });
    }
  }
}

void Pool::OnGlideinStatus(const Job& j, bool leaving) {
  if (!leaving && (j.status == kIdle || j.status == kRunning)) return;
  std::string name = "glidein-" + JobIdString(j.key);
  for (const auto& sd : std::vector<std::shared_ptr<Startd>>(startds_.begin(), startds_.end())) {
    if (sd->welcomed && sd->credential && sd->credential->kind == pool::CredentialKind::kGlidein &&
        sd->credential->name == name) {
      (void)Admitted(sd);  // its credential no longer holds: shown out, its runs run elsewhere
    }
  }
}

void Pool::RecheckAdmissions() {
  for (const auto& sd : std::vector<std::shared_ptr<Startd>>(startds_.begin(), startds_.end()))
    if (sd->welcomed) (void)Admitted(sd);
}

bool Pool::HasRun(const Job& j) const {
  return run_of_.contains(j.key);
}

Status Pool::VacateJob(Job& j, const std::string& reason) {
  std::string id = JobIdString(j.key);
  if (j.universe != kUniverseVanilla) {
    return Fail(
        ErrorCode::kConflict,
        "Job " + id + " is not a vanilla job: only jobs running in the pool can be vacated");
  }
  auto r = run_of_.find(j.key);
  auto it = r == run_of_.end() ? runs_.end() : runs_.find(r->second);
  if (!RunUnderWay(j.status) || it == runs_.end())
    return Fail(ErrorCode::kConflict, "Job " + id + " is not running");
  if (it->second.vacating) return Fail(ErrorCode::kConflict, "Job " + id + " is being vacated");
  spdlog::info("agent: pool: vacating job {} from {}: {}", id, it->second.slot, reason);
  Vacate(it->second, reason);
  return {};
}

Status Pool::CheckpointJob(Job& j) {
  std::string id = JobIdString(j.key);
  if (j.universe != kUniverseVanilla ||
      !j.ad.EvaluateBool("TransparentCheckpoint").value_or(false)) {
    return Fail(ErrorCode::kConflict,
                "Job " + id + " does not take transparent checkpoints (checkpoint = transparent)");
  }
  auto r = run_of_.find(j.key);
  auto it = r == run_of_.end() ? runs_.end() : runs_.find(r->second);
  auto sd = it == runs_.end() ? nullptr : it->second.startd.lock();
  if (!RunUnderWay(j.status) || !sd || sd->closed)
    return Fail(ErrorCode::kConflict, "Job " + id + " is not running");
  if (it->second.vacating) return Fail(ErrorCode::kConflict, "Job " + id + " is being vacated");
  spdlog::info("agent: pool: job {}: asking {} for a checkpoint", id, it->second.slot);
  Send(sd, Message{.type = MsgType::kCheckpoint, .job = id, .run = it->second.id});
  return {};
}

void Pool::VacateStopped() {
  auto keys = std::move(to_vacate_);
  to_vacate_.clear();
  for (JobKey key : keys) {
    auto r = run_of_.find(key);
    if (r == run_of_.end()) continue;
    auto it = runs_.find(r->second);
    if (it == runs_.end()) continue;
    Job* j = queue_.Find(key);
    if (j && RunUnderWay(j->status)) continue;  // released again meanwhile? it runs on
    Vacate(it->second, !j                   ? "the job left the queue"
                       : j->status == kHeld ? "the job was held"
                                            : "the job was removed");
  }
}

void Pool::Recover() {
  double now = queue_.Now();
  for (auto& [key, j] : queue_.jobs()) {
    if (j.universe != kUniverseVanilla) continue;
    if (j.status == kIdle) {
      OnStatus(j, false);
      continue;
    }
    if (!RunUnderWay(j.status) && j.status != kRemoved && j.status != kHeld) continue;
    auto id = j.ad.EvaluateString("PoolRunId");
    auto slot = j.ad.EvaluateString("RemoteHost");
    if (!id || !slot) {
      if (RunUnderWay(j.status))
        (void)queue_.SetIdle(j,
                             "The agent restarted and the job's run is not known; it runs again.");
      else if (j.status == kRemoved)
        hooks_.retire(j);
      continue;
    }
    Run& run = runs_.try_emplace(*id, shadows_, *id, key).first->second;
    run.slot = *slot;
    run.state = Run::State::kRunning;
    // Its program's start counted before the restart, or not yet (the startd says so again). A
    // run placed by an agent from before KiteStartedRun (none: StartRun sets it "") had its start
    // counted when it was placed.
    if (!j.ad.Lookup("KiteStartedRun"))
      queue_.SetAttr(j, "KiteStartedRun", classad::MakeString(*id));
    run.started = JobQueue::ProgramStartRecorded(j, *id);
    run.lease_until = now + LeaseOf(j);
    run_of_[key] = *id;
  }
  ArmLeases();
  hooks_.commit_soon();
}

void Pool::OnFlushed() {
  auto checkpoints = std::move(checkpoint_acks_);
  checkpoint_acks_.clear();
  for (const auto& a : checkpoints) CheckpointCommitted(a);
  auto gone = std::move(gone_checkpoints_);
  gone_checkpoints_.clear();
  for (JobKey key : gone) {
    std::error_code ec;
    fs::remove_all(shadows_.CheckpointDir(key), ec);
  }
  auto acks = std::move(acks_);
  acks_.clear();
  for (const auto& a : acks) {
    if (auto sd = a.startd.lock())
      Send(sd, Message{.type = MsgType::kAck, .job = a.job, .run = a.run});
  }
  auto todo = std::move(after_commit_);
  after_commit_.clear();
  for (const auto& id : todo) {
    auto it = runs_.find(id);
    if (it != runs_.end() && it->second.state == Run::State::kCommitting) SendActivate(it->second);
  }
}

std::unique_ptr<NegotiationPass> Pool::MakePass() {
  return std::make_unique<NegotiationPass>(
      std::vector<SlotSource*>{&collector_},
      NegotiationPass::Hooks{
          .idle_ad = [this](const JobKey& key) -> const classad::ClassAd* {
            Job* j = queue_.Find(key);
            return j && j->status == kIdle ? &j->ad : nullptr;
          },
          .may_run_here =
              [this](const classad::ClassAd& ad) { return shadows_.LocalRestoreAllowed(ad); }},
      SystemClock(), kNegotiationSlice);
}

void Pool::NegotiateSoon() {
  if (pass_->Again() || negotiate_posted_) return;
  negotiate_posted_ = true;
  boost::asio::post(io_, [this] {
    negotiate_posted_ = false;
    Negotiate();
  });
}

// One slice of a pass (agent/negotiation.h); its matches start, and, if jobs are left, the next
// slice is posted behind whatever else the agent has to do.
void Pool::Negotiate() {
  auto slice = pass_->Run(idle_);
  for (const auto& m : slice.matches) {
    auto* slot = collector_.Find(m.slot);
    Job* j = queue_.Find(m.job);
    if (j && slot) StartRun(*j, *slot);
  }
  for (const auto& sd : collector_.TakeDistrusted()) (void)Admitted(sd);
  if (!slice.over) {
    negotiate_posted_ = true;
    boost::asio::post(io_, [this] {
      negotiate_posted_ = false;
      Negotiate();
    });
    return;
  }
  const auto& done = *slice.summary;
  if (size_t seen = done.considered + done.skipped; seen > 0) {
    // Slow or long ones are worth the user's attention; the others only when debugging.
    bool notable = done.busy > 0.1 || seen >= 1000;
    spdlog::log(notable ? spdlog::level::info : spdlog::level::debug,
                "agent: pool: negotiation took {:.1f} ms ({} idle job(s) tried, {} matched; {} "
                "skipped as of a kind that matched none; {} slice(s) over {:.1f} ms)",
                done.busy * 1000, done.considered, done.matched, done.skipped, done.slices,
                done.elapsed * 1000);
  }
  if (slice.again) NegotiateSoon();
}

void Pool::StartRun(Job& j, const Collector<Startd>::Slot& slot) {
  // Unguessable: a run id is what a startd's messages about the run must name, and nobody but
  // the startd that was given the run learns it.
  std::string id =
      std::to_string(j.ad.EvaluateInt("QDate").value_or(0)) + "-" + JobIdString(j.key) + "-" +
      std::to_string(j.ad.EvaluateInt("NumJobStarts").value_or(0) + 1) + "-" + RandomHex(16);
  queue_.SetAttr(j, "PoolRunId", classad::MakeString(id));
  queue_.SetAttr(j, "RemoteHost", classad::MakeString(slot.name));  // named by the execute event
  queue_.SetAttr(j, "KiteStartedRun", classad::MakeString(""));     // not yet: RecordProgramStart
  // Running from now (the run is placed); its start (NumJobStarts, the execute event) counts
  // once the startd says the program runs: a run lost before that never ran.
  if (!queue_.MarkRunning(j, /*program_started=*/false)) return;
  Run& run = runs_.try_emplace(id, shadows_, id, j.key).first->second;
  run.slot = slot.name;
  run.startd = slot.owner;
  collector_.Claim(slot.name, id);
  run_of_[j.key] = id;
  after_commit_.push_back(id);
  hooks_.commit_soon();
}

// HTCondor's rule: no transfer when the job does not ask for it (should_transfer_files = NO, or
// IF_NEEDED, the default) and the slot shares its FileSystemDomain. Only the desktop's own startd
// (the local credential, on the unix door) shares the desktop's files: Stamp gives every other
// startd a domain of its own, and this asks for the local credential besides. Jobs that need
// their sandbox keep it: remote I/O, and checkpoints of either kind.
std::string Pool::InPlaceDir(const Job& j, const Startd& sd, const std::string& slot) const {
  if (!sd.credential || sd.credential->kind != pool::CredentialKind::kLocal ||
      sd.peer.door != PoolDoor::kLocal)
    return "";
  auto should = ToLower(j.ad.EvaluateString("ShouldTransferFiles").value_or("IF_NEEDED"));
  if (should != "no" && should != "if_needed") return "";
  const auto* it = collector_.Find(slot);
  if (!it) return "";
  auto mine = j.ad.EvaluateString("FileSystemDomain");
  auto theirs = it->ad.EvaluateString("FileSystemDomain");
  if (!mine || !theirs || mine->empty() || *mine != *theirs) return "";
  if (j.ad.EvaluateBool("WantRemoteIO").value_or(false) ||
      j.ad.EvaluateBool("TransparentCheckpoint").value_or(false) ||
      j.ad.Lookup("CheckpointExitCode") != nullptr ||
      j.ad.EvaluateInt("NumCheckpoints").value_or(0) > 0)
    return "";
  std::string iwd = j.ad.EvaluateString("Iwd").value_or("");
  return !iwd.empty() && iwd.front() == '/' ? iwd : "";
}

void Pool::SendActivate(Run& run) {
  Job* j = queue_.Find(run.job);
  auto sd = run.startd.lock();
  if (!j || j->status != kRunning) return DropRun(run.id);
  if (!sd || sd->closed) return;  // its lease decides
  if (!Admitted(sd)) return;      // shown out: its runs, this one included, are settled
  const auto* slot = collector_.Find(run.slot);
  auto activate = run.shadow.Activate(*j, RunPlace{.slot = run.slot,
                                                   .slot_ad = slot ? &slot->ad : nullptr,
                                                   .door = sd->peer.door,
                                                   .in_place = InPlaceDir(*j, *sd, run.slot)});
  if (!activate) {
    // The job cannot go as it is: it is held, and its slot goes to another.
    (void)queue_.Hold(*j, activate.error().reason, activate.error().code);
    DropRun(run.id);
    hooks_.commit_soon();
    NegotiateSoon();
    return;
  }
  Send(sd, *activate);
  run.state = Run::State::kSending;
  sd->pumping.push_back(run.id);
  PumpInputs(sd);
}

// Each run's input in turn, while the startd's queue is short.
void Pool::PumpInputs(const std::shared_ptr<Startd>& sd) {
  while (!sd->closed && !sd->pumping.empty()) {
    auto it = runs_.find(sd->pumping.front());
    if (it == runs_.end() || it->second.state != Run::State::kSending) {
      sd->pumping.pop_front();
      continue;
    }
    Run& run = it->second;
    auto pumped = run.shadow.Pump(*sd, kOutboxHigh);
    if (pumped == Shadow::Pumped::kMore) return;
    // Sent, or stopped by a hold (which vacates the run): nothing more goes.
    run.state = Run::State::kRunning;
    if (pumped == Shadow::Pumped::kStopped) hooks_.commit_soon();
    sd->pumping.pop_front();
  }
}

void Pool::Vacate(Run& run, const std::string& reason) {
  auto sd = run.startd.lock();
  if (!sd || sd->closed || run.state == Run::State::kCommitting) {
    // Nothing runs (or nothing we can reach): settle it now.
    return SettleLost(run.id, "The job's run was stopped: " + reason, 0);
  }
  if (run.vacating) return;
  run.vacating = true;
  Send(sd, Message{.type = MsgType::kVacate,
                   .slot = run.slot,
                   .job = JobIdString(run.job),
                   .run = run.id,
                   .reason = reason});
}

void Pool::DropRun(const std::string& id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  collector_.Release(it->second.slot, id);
  auto r = run_of_.find(it->second.job);
  if (r != run_of_.end() && r->second == id) run_of_.erase(r);
  runs_.erase(it);
}

std::vector<Pool::SlotView> Pool::Slots() const {
  std::vector<SlotView> out;
  for (const auto& [name, slot] : collector_.slots()) {
    auto sd = slot.owner.lock();
    SlotView v{&slot.ad, std::nullopt, sd && sd->peer.door == PoolDoor::kLocal};
    auto it = runs_.find(slot.run);
    if (it != runs_.end()) v.job = it->second.job;
    out.push_back(v);
  }
  return out;
}

}  // namespace kite::agent
