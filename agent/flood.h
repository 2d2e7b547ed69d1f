// Glide-in flooding (docs/broker.md, "Flooding"): while idle vanilla jobs wait that no slot of
// the pool can take, keep glide-ins pending at every site whose ad can host them, more of them
// where Kite observed the shortest waits; once enough have started, cancel the ones still
// pending. Never more than the request's `max` pending or running. The glideinWMS frontend and
// factory, inside the user's agent. Used on the agent's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/broker.h"
#include "agent/pool.h"
#include "agent/queue.h"
#include "classad/expr.h"
#include "common/error.h"
#include "glidein/glidein_job.h"

namespace kite::agent {

class Flood {
 public:
  struct Hooks {
    std::function<void()> commit;  // queue changes to commit soon
    // Remove these pending glide-ins (cancelled at their sites) for `reason`.
    std::function<void(const std::vector<Job*>&, const std::string& reason)> remove;
  };
  // `authority` issues each glide-in it submits its pool credential.
  Flood(boost::asio::io_context& io, JobQueue& queue, const Pool& pool, Broker& broker,
        PoolAuthority& authority, std::string state_path, Hooks hooks);

  // Reads the request kept in `state_path` and goes on with it (nothing when there is none).
  void Start();
  void Stop();
  // Starts (or replaces) flooding; kept in `state_path` so a restarted agent goes on.
  Status Configure(glidein::FloodRequest request);
  // Stops flooding: no more glide-ins are submitted and the pending ones are cancelled.
  Status Clear();
  // What flooding does now, for `kite glidein flood --status`: a line per site and a summary.
  std::string Describe() const;
  bool active() const { return request_.has_value(); }

  // One pass now (tests; otherwise every kInterval seconds).
  void Tick();
  static constexpr double kInterval = 2;

  // A glide-in the flood submitted (KiteFlood = true).
  static bool IsFloodGlidein(const Job& job);

 private:
  void Arm();
  Result<int> SubmitTo(const std::string& resource, int count);

  boost::asio::io_context& io_;
  JobQueue& queue_;
  const Pool& pool_;
  Broker& broker_;
  PoolAuthority& authority_;
  std::string state_path_;
  Hooks hooks_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  std::optional<glidein::FloodRequest> request_;
  classad::ExprPtr constraint_;
  std::string last_;  // the last pass, for Describe
  bool stopped_ = true;
};

}  // namespace kite::agent
