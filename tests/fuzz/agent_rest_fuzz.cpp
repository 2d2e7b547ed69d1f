// Fuzzes the agent's REST endpoint: bytes are parsed as an HTTP request and, when they form one,
// handed to the same RestService the TCP listener uses (token, method, target and query parsing,
// every route), against a real queue with a few jobs in a temporary directory. Half the inputs
// get the right token, so the routes behind it are reached too.
#include <unistd.h>

#include <boost/beast/http.hpp>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "agent/agent.h"
#include "agent/rest.h"

namespace {

constexpr const char* kToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

kite::agent::RestService* TheService() {
  static kite::agent::RestService* service = [] {
    char tmpl[] = "/tmp/kite-rest-fuzz-XXXXXX";
    kite::agent::AgentOptions o;
    o.home = ::mkdtemp(tmpl);
    o.start_gridmanagers = false;
    auto* a = new kite::agent::Agent(o);
    if (!a->Start()) std::abort();
    auto& q = a->queue();
    auto c = q.NewCluster();
    kite::agent::SubmitRequest req;
    req.cluster = *c;
    req.common = {{"Owner", "\"fuzz\""},
                  {"Cmd", "\"/bin/true\""},
                  {"JobUniverse", "12"},
                  {"x509userproxy", "\"/nonexistent/proxy\""}};
    req.procs = {{{"ProcId", "0"}, {"JobStatus", "5"}}, {{"ProcId", "1"}}};
    if (!q.Submit(req)) std::abort();
    return new kite::agent::RestService(*a, kToken);
  }();
  return service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  if (size == 0) return 0;
  bool with_token = data[0] & 1;
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(8192);
  parser.body_limit(64 << 10);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(data + 1, size - 1), ec);
  if (ec || !parser.is_done()) return 0;
  auto req = parser.release();
  if (with_token) req.set(http::field::authorization, std::string("Bearer ") + kToken);
  auto res = TheService()->Handle(req);
  int code = res.result_int();
  if (code < 200 || code > 599) std::abort();
  // Without the token nothing but the open paths may answer anything but 401.
  if (!with_token && req[http::field::authorization].empty() && code == 200) {
    std::string_view t = req.target();
    auto path = t.substr(0, t.find('?'));
    if (path != "/" && path != "/index.html" && path != "/healthz") std::abort();
  }
  // Nothing is written: the queue never changes.
  if (req.method() != http::verb::get && req.method() != http::verb::head && code == 200)
    std::abort();
  return 0;
}
