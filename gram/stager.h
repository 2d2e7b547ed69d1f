// Helper threads for the job manager's blocking GASS transfers (stage-in, output streaming and
// stage-out). Work runs here; its result is posted back to the job manager's io_context.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>

#include "credentials/verify.h"

namespace kite::gram {

class Stager {
 public:
  explicit Stager(std::shared_ptr<const credentials::Verifier> verifier, size_t threads = 2)
      : verifier_(std::move(verifier)), pool_(threads) {}
  ~Stager() { Stop(); }

  // Runs `work` on a helper thread. Thread-safe.
  void Run(std::function<void()> work) { boost::asio::post(pool_, std::move(work)); }
  void Stop() { pool_.join(); }

  const std::shared_ptr<const credentials::Verifier>& verifier() const { return verifier_; }

 private:
  std::shared_ptr<const credentials::Verifier> verifier_;
  boost::asio::thread_pool pool_;
};

}  // namespace kite::gram
