// The callback sender's helper thread: a due-time queue, cached TLS contexts and connections.
#include "gram/callback_sender.h"

#include <spdlog/spdlog.h>

#include <map>

#include "credentials/tls.h"
#include "gram/https_connection.h"

namespace kite::gram {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kBackoff[] = {std::chrono::milliseconds(200),
                                                  std::chrono::milliseconds(1000),
                                                  std::chrono::milliseconds(3000)};
constexpr auto kTimeout = std::chrono::milliseconds(5000);

}  // namespace

struct CallbackSender::Item {
  Callback cb;
  int attempts = 0;
  Clock::time_point due;
};

struct CallbackSender::Cache {
  std::map<std::string, credentials::SslContextPtr> contexts;           // by credential path
  std::map<std::string, std::unique_ptr<HttpsConnection>> connections;  // by path + " " + host:port
};

CallbackSender::CallbackSender(std::shared_ptr<const credentials::Verifier> verifier)
    : verifier_(std::move(verifier)), cache_(std::make_unique<Cache>()) {
  thread_ = std::thread([this] { Loop(); });
}

CallbackSender::~CallbackSender() {
  Stop();
}

void CallbackSender::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t CallbackSender::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

void CallbackSender::Send(Callback c) {
  auto item = std::make_shared<Item>();
  item->cb = std::move(c);
  item->due = Clock::now();
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
}

void CallbackSender::CredentialChanged(const std::string& path) {
  std::lock_guard lock(mu_);
  changed_credentials_.push_back(path);
}

Status CallbackSender::Deliver(const Callback& cb) {
  auto url = ParseHttpsUrl(cb.url);
  if (!url) return Fail(url.error());
  auto& ctx = cache_->contexts[cb.credential_path];
  if (!ctx) {
    auto cred = credentials::LoadProxyFile(cb.credential_path);
    if (!cred) return Fail(cred.error());
    auto c = credentials::MakeClientContext(*cred, verifier_);
    if (!c) return Fail(c.error());
    ctx = *c;
  }
  std::string key = cb.credential_path + " " + url->host + ":" + std::to_string(url->port);
  auto& conn = cache_->connections[key];
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = conn && conn->reusable();
    if (!reused) {
      std::string owner = cb.owner;
      auto c = HttpsConnection::Open(
          ctx, url->host, url->port, kTimeout, [owner](const credentials::Identity& id) -> Status {
            if (id.subject == owner) return {};
            return Fail(ErrorCode::kAuthFailed,
                        "callback server is " + id.subject + ", not the job's owner");
          });
      if (!c) return Fail(c.error());
      conn = std::move(*c);
    }
    bool nothing = false;
    auto r = conn->RoundTrip("POST", url->target, cb.body, {}, kTimeout, &nothing);
    if (r && r->status / 100 == 2) return {};
    if (r) return Fail(ErrorCode::kUnavailable, "callback answered " + std::to_string(r->status));
    if (!(reused && nothing)) return Fail(r.error());
  }
  return Fail(ErrorCode::kUnavailable, "connection lost twice");
}

void CallbackSender::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // The earliest due item (retries wait behind their backoff without blocking others).
    auto best = queue_.begin();
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if ((*it)->due < (*best)->due) best = it;
    if ((*best)->due > Clock::now()) {
      cv_.wait_until(lock, (*best)->due);
      continue;
    }
    auto item = *best;
    queue_.erase(best);
    for (const auto& path : changed_credentials_) {
      cache_->contexts.erase(path);
      std::erase_if(cache_->connections,
                    [&](const auto& kv) { return kv.first.starts_with(path + " "); });
    }
    changed_credentials_.clear();
    lock.unlock();
    Status st = Deliver(item->cb);
    lock.lock();
    if (st) {
      ++sent_;
    } else if (item->attempts < static_cast<int>(std::size(kBackoff))) {
      item->due = Clock::now() + kBackoff[item->attempts++];
      queue_.push_back(item);
    } else {
      spdlog::warn("callback to {} dropped: {}", item->cb.url, st.error().ToString());
    }
  }
}

}  // namespace kite::gram
