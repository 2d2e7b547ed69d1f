// The job manager's listener: HTTP/1.1 on a Unix socket (mode 0600) that only the gatekeeper
// (root, or the same account) can reach, so the Kite-Identity header it sets can be trusted.
// Runs on the job manager's io thread; requests are handed to JobManager::Handle one at a time.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <memory>
#include <string>

#include "common/error.h"
#include "gram/job_manager.h"

namespace kite {
template <typename Protocol>
class AcceptLoop;
}  // namespace kite

namespace kite::gram {

class JmServer {
 public:
  JmServer(boost::asio::io_context& io, JobManager& jm);
  Status Listen(const std::string& socket_path);
  void Close();

 private:
  void DoAccept();

  JobManager& jm_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<AcceptLoop<boost::asio::local::stream_protocol>> loop_;
};

}  // namespace kite::gram
