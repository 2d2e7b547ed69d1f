// A MyProxy client: retrieve a proxy (as myproxy-logon does) and store one (as myproxy-init).
//
// The protocol (VERSION=MYPROXYv2, NCSA's PROTOCOL document): TLS to the server, one byte '0',
// then NUL-terminated "KEY=value\n" requests and responses, DER certificate requests, and
// certificate chains sent as one message of a count byte followed by DER certificates. Each
// message is one TLS record, as Globus GSI frames them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace kite::credentials {

struct MyProxyOptions {
  std::string host;
  uint16_t port = 7512;
  std::string username;    // the MyProxy account name
  std::string passphrase;  // at least 6 characters (the server's default policy)
  std::string cred_name;   // optional: one of several credentials under `username`
  // get: lifetime of the proxy asked for; store: the longest lifetime a retrieval may ask for.
  std::chrono::seconds lifetime = std::chrono::hours(12);
  // The server's subject when it is not "host/<host>" (MYPROXY_SERVER_DN).
  std::string server_dn;
  std::shared_ptr<const Verifier> verifier;  // trusted CAs for the server's certificate
  // The client's own credential: needed by store; get works anonymously without one.
  std::optional<Credential> client_credential;
  KeySpec key;  // get: the key made for the retrieved proxy
  std::chrono::seconds timeout = std::chrono::seconds(30);  // per network operation
};

// Retrieves a proxy: the private key is made here and only a certificate request is sent.
// kAuthFailed when the server refuses (wrong passphrase, no such user), kUnavailable when it
// cannot be reached.
Result<Credential> MyProxyGet(const MyProxyOptions& options);

// Stores a credential delegated from `credential` (a proxy chain or user certificate) valid for
// `stored_lifetime`; the server makes the key and we sign its request.
Status MyProxyStore(const MyProxyOptions& options, const Credential& credential,
                    std::chrono::seconds stored_lifetime = std::chrono::hours(24 * 7));

}  // namespace kite::credentials
