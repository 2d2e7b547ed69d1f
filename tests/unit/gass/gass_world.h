// Shared by the GASS unit tests: a test CA with a host, two users and a proxy, a GASS server on
// a loopback port served by two threads, clients, a raw TLS client for hand-made requests, and
// file helpers.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "credentials/ca.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"
#include "gass/client.h"
#include "gass/server.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::gass::testing {

using kite::testing::TempDir;

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// Deterministic pseudo-random bytes.
inline std::string RandomBytes(size_t n, uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

// SHA-256 of a file, hex; read in 1 MiB pieces.
inline std::string Sha256OfFile(const std::string& path) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char md[32];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// What a hand-made request got back.
struct RawReply {
  int status = 0;                              // 0: no reply (connection closed or failed)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string error;  // why there is no reply
};

// Opens a TLS connection with `cred`, sends `bytes` as they are and reads one response.
RawReply RawRequest(uint16_t port, const credentials::Credential& cred,
                    std::shared_ptr<const credentials::Verifier> verifier,
                    const std::string& bytes);

struct GassWorld {
  TempDir dir;
  credentials::TestCa ca;
  credentials::Credential host, jane, jane_proxy, bob;
  std::string jane_dn, bob_dn;
  std::shared_ptr<const credentials::Verifier> verifier;
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::unique_ptr<GassServer> server;

  // A CA, credentials and a running server (two io threads); `tweak` edits the options first.
  static std::unique_ptr<GassWorld> Make(
      const std::function<void(GassServerOptions&)>& tweak = nullptr);
  ~GassWorld();

  GassClient Client(const credentials::Credential& cred) const {
    return GassClient({.base_url = server->url(), .tls = {cred, verifier}});
  }
  RawReply Raw(const std::string& bytes) const {
    return RawRequest(server->port(), jane_proxy, verifier, bytes);
  }
  // A file in the world's directory with `data`; returns its path.
  std::string File(const std::string& name, const std::string& data) const {
    std::string p = dir / name;
    WriteAll(p, data);
    return p;
  }
};

}  // namespace kite::gass::testing
