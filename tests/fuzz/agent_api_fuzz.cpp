// Fuzzes the agent's API: bytes are parsed as an HTTP request and, when they form one, handed to
// the same handler the socket server uses, against a real queue in a temporary directory.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <boost/beast/http.hpp>

#include "agent/agent.h"
#include "agent/api.h"

namespace {

kite::agent::Agent* TheAgent() {
  static kite::agent::Agent* agent = [] {
    char tmpl[] = "/tmp/kite-api-fuzz-XXXXXX";
    kite::agent::AgentOptions o;
    o.home = ::mkdtemp(tmpl);
    o.start_gridmanagers = false;  // grid jobs the fuzzer submits must not start real processes
    auto* a = new kite::agent::Agent(o);
    if (!a->Start()) std::abort();
    return a;
  }();
  return agent;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(1 << 20);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_done()) return 0;
  auto req = parser.release();
  // Endpoints that stop the agent or wait on its (never run) event loop are not fuzzed here.
  if (req.target() == "/v1/shutdown" || req.target() == "/v1/wait") return 0;
  // A grid poll waits when nothing changed; only its immediate answers are fuzzed.
  if (req.target() == "/v1/grid/jobs" && (req.body().find("epoch") != std::string::npos ||
                                          req.body().find("\\u") != std::string::npos)) {
    return 0;
  }
  bool answered = false;
  kite::agent::HandleApiRequest(*TheAgent(), req, [&](kite::agent::ApiResponse res) {
    answered = true;
    if (res.result_int() < 200 || res.result_int() > 599) std::abort();
  });
  if (!answered) std::abort();
  return 0;
}
