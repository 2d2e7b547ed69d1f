// A grid resource: request slots, back-off, delegation and reports.
#include "gridmanager/site.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace kite::gridmanager {
namespace {

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  return out;
}

}  // namespace

GridClock GridClock::Real() {
  using namespace std::chrono;
  return {[] { return duration<double>(steady_clock::now().time_since_epoch()).count(); },
          [] { return duration<double>(system_clock::now().time_since_epoch()).count(); }};
}

Site::Site(boost::asio::io_context& io, GridResource name, std::shared_ptr<SiteLink> link,
           SiteOptions options, GridClock clock, Hooks hooks)
    : name_(std::move(name)),
      link_(std::move(link)),
      options_(options),
      clock_(std::move(clock)),
      hooks_(std::move(hooks)),
      retry_timer_(io) {}

void Site::Send(SiteRequest request, SiteDone done) {
  if (in_flight_ < options_.max_requests) return Start(std::move(request), std::move(done));
  queued_.emplace_back(std::move(request), std::move(done));
}

void Site::Start(SiteRequest request, SiteDone done) {
  ++in_flight_;
  auto op = request.op;
  // The link of this moment: a proxy refresh may replace link_ while the request is out.
  link_->Send(request, [this, op, done = std::move(done)](Result<SiteAnswer> a) {
    --in_flight_;
    if (!a && op == SiteRequest::Op::kCommitEnd && a.error().code() == ErrorCode::kNotFound) {
      a = SiteAnswer{};
    }
    if (a) {
      MarkUp();
    } else if (SiteDown(a.error())) {
      MarkDown(a.error());
    }
    done(std::move(a));
    while (!queued_.empty() && in_flight_ < options_.max_requests) {
      auto next = std::move(queued_.front());
      queued_.pop_front();
      Start(std::move(next.first), std::move(next.second));
    }
  });
}

void Site::MarkUp() {
  backoff_ = 0;
  down_until_ = 0;
  Note(true, "");
}

void Site::MarkDown(const Error& e) {
  double now = clock_.steady();
  if (down_until_ > now) return;  // already waiting
  backoff_ = std::min(options_.backoff_max, std::max(options_.backoff_min, backoff_ * 2));
  down_until_ = now + backoff_;
  Note(false, e.message());
  spdlog::warn("gridmanager: {} unreachable ({}); retrying in {:.0f} s", HostPort(), e.message(),
               backoff_);
  retry_timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(backoff_ * 1000)));
  retry_timer_.async_wait([this](auto ec) {
    if (!ec) Drive();
  });
}

// Records an answer (or a failure to reach the site) for the agent; the report goes out with the
// next update, at once when reachability changed or the agent's last contact is 10 s old.
void Site::Note(bool up, const std::string& error) {
  up_ = up;
  if (up) last_contact_ = clock_.wall();
  if (!up) last_error_ = error;
  if (reported_up_ == up && reported_contact_ >= 0 && last_contact_ - reported_contact_ < 10) {
    return;
  }
  report_due_ = true;
  if (hooks_.report_due) hooks_.report_due();
}

std::optional<grid::ResourceReport> Site::TakeReport() {
  if (!report_due_) return std::nullopt;
  report_due_ = false;
  reported_up_ = up_;
  reported_contact_ = last_contact_;
  return grid::ResourceReport{HostPort(), up_, last_contact_, last_error_};
}

bool Site::Ready(GridTask task) {
  if (task == GridTask::kSubmit) {
    // A delegation near its end is replaced only when a newer proxy can do better (a short proxy
    // gives short delegations; the agent holds jobs whose proxy runs out).
    if (delegation_id_.empty() ||
        (delegation_not_after_ < clock_.wall() + 60 && delegated_gen_ < credential_gen_)) {
      delegation_id_.clear();
      EnsureDelegation();
      return false;
    }
    return active_jobs_ < options_.max_jobs;  // a finishing job drives the site again
  }
  if (task == GridTask::kSignal && delegation_id_.empty() && !delegation_refused_) {
    // Moved to this run's delegation too, so that a refreshed proxy reaches the job.
    EnsureDelegation();
    return false;
  }
  return true;
}

void Site::Drive() {
  if (!delegation_id_.empty() && delegated_gen_ < credential_gen_ && !delegating_) {
    return RefreshDelegation();  // jobs go on once the site holds the new proxy
  }
  hooks_.drive();
}

void Site::ProxyRefreshed(std::shared_ptr<SiteLink> link, int64_t credential_gen) {
  if (link) link_ = std::move(link);
  credential_gen_ = credential_gen;
  delegation_refused_ = false;
}

void Site::EnsureDelegation() {
  if (delegating_) return;
  delegating_ = true;
  SiteRequest req{.op = SiteRequest::Op::kDelegate,
                  .request_id = "kite-delegation-" + RandomHex(12)};
  Send(std::move(req),
       [this, gen = credential_gen_](Result<SiteAnswer> a) { OnDelegated(a, gen); });
}

void Site::OnDelegated(const Result<SiteAnswer>& a, int64_t gen) {
  delegating_ = false;
  if (a) {
    delegation_id_ = a->delegation.id;
    delegation_not_after_ = a->delegation.not_after;
    delegated_gen_ = gen;
    delegation_refused_ = false;
    spdlog::info("gridmanager: delegated to {} as {}", HostPort(), delegation_id_);
    return Drive();
  }
  if (SiteDown(a.error())) return;  // backed off; the retry drives the site again
  // Refused: no job can go there with this proxy. Jobs already there are told where GASS and
  // callbacks moved without a new delegation.
  delegation_refused_ = true;
  hooks_.proxy_refused(a.error());
}

// The site keeps the delegation's id and swaps the proxy behind it, so every job there that uses
// it (all of this gridmanager's jobs there: see Ready) goes on with the new one.
void Site::RefreshDelegation() {
  delegating_ = true;
  SiteRequest req{.op = SiteRequest::Op::kDelegate,
                  .request_id = "kite-delegation-" + RandomHex(12),
                  .delegation_id = delegation_id_};
  Send(std::move(req),
       [this, gen = credential_gen_](Result<SiteAnswer> a) { OnRefreshed(a, gen); });
}

void Site::OnRefreshed(const Result<SiteAnswer>& a, int64_t gen) {
  delegating_ = false;
  if (a) {
    delegation_not_after_ = a->delegation.not_after;
    delegated_gen_ = gen;
    spdlog::info("gridmanager: refreshed delegation {} at {} (valid until {:.0f})", delegation_id_,
                 HostPort(), a->delegation.not_after);
  } else if (SiteDown(a.error())) {
    return;
  } else {
    // The site no longer has it (or refuses the new proxy): start a new delegation; jobs there
    // are moved to it when they are next driven.
    spdlog::warn("gridmanager: refreshing delegation {} at {} failed: {}", delegation_id_,
                 HostPort(), a.error().message());
    delegation_id_.clear();
    ++delegation_epoch_;
  }
  Drive();
}

}  // namespace kite::gridmanager
