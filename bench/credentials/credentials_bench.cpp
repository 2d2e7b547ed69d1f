// Rates of Kite's credential operations beside the raw OpenSSL operations they are built on,
// so the overhead of our code shows: proxy creation, chain verification, delegation round trip.
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <filesystem>

#include "credentials/ca.h"
#include "credentials/delegation.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace {

using namespace kite::credentials;

// One CA (RSA-2048, as grid CAs are) with an RSA-2048 user and an EC P-256 user.
struct World {
  std::string dir;
  TestCa ca;
  Credential rsa_user, ec_user;
  std::shared_ptr<const Verifier> verifier;

  World() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kite-bench-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    ca = *TestCa::Init(dir + "/ca");
    rsa_user = *ca.IssueUserCredential("CN=RSA User", {.key = {KeyAlgorithm::kRsa, 2048}});
    ec_user = *ca.IssueUserCredential("CN=EC User", {.key = {KeyAlgorithm::kEcP256}});
    verifier = *Verifier::Create({.ca_dir = ca.trusted_dir()});
  }
  ~World() { std::filesystem::remove_all(dir); }
  const Credential& User(int64_t rsa) const { return rsa ? rsa_user : ec_user; }
};

World& W() {
  static World w;
  return w;
}

// arg 0: issuer is RSA (1) or EC (0). New EC P-256 key per proxy (Kite's default).
void BM_CreateProxyNewEcKey(benchmark::State& state) {
  const Credential& user = W().User(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(CreateProxy(user, {}));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CreateProxyNewEcKey)->ArgName("rsa_issuer")->Arg(1)->Arg(0);

// A pre-made key (RSA-2048 or EC): what signing a proxy costs without key generation.
void BM_SignProxyPremadeKey(benchmark::State& state) {
  const Credential& user = W().User(state.range(0));
  static PrivateKey rsa = *PrivateKey::Generate({KeyAlgorithm::kRsa, 2048});
  static PrivateKey ec = *PrivateKey::Generate({});
  EVP_PKEY* key = state.range(1) ? rsa.get() : ec.get();
  for (auto _ : state) benchmark::DoNotOptimize(SignProxy(user, key, {}));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SignProxyPremadeKey)
    ->ArgNames({"rsa_issuer", "rsa_key"})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({0, 0});

// proxy -> user -> CA, verified with every RFC 3820 rule.
void BM_VerifyProxyChain(benchmark::State& state) {
  auto proxy = CreateProxy(W().User(state.range(0)), {});
  for (auto _ : state) {
    auto id = W().verifier->Verify(proxy->credential.chain);
    if (!id) state.SkipWithError(id.error().message().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerifyProxyChain)->ArgName("rsa_issuer")->Arg(1)->Arg(0);

// Receiver key + CSR, delegator check + sign, receiver completes: one full delegation.
void BM_DelegationRoundTrip(benchmark::State& state) {
  auto delegator = CreateProxy(W().User(state.range(0)), {});
  for (auto _ : state) {
    auto req = DelegationRequest::Create();
    auto pem = SignDelegation(req->csr_pem(), delegator->credential, {});
    benchmark::DoNotOptimize(req->Complete(*pem));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DelegationRoundTrip)->ArgName("rsa_issuer")->Arg(1)->Arg(0);

// The OpenSSL floor in the same process: one signature (what signing a proxy must cost), one
// signature verification, one EC key generation.
void BM_OpenSslSign(benchmark::State& state) {
  const PrivateKey& key = W().User(state.range(0)).key;
  unsigned char digest[32] = {1, 2, 3};
  unsigned char sig[512];
  for (auto _ : state) {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(key.get(), nullptr);
    EVP_PKEY_sign_init(ctx);
    EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256());
    size_t len = sizeof sig;
    EVP_PKEY_sign(ctx, sig, &len, digest, sizeof digest);
    EVP_PKEY_CTX_free(ctx);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OpenSslSign)->ArgName("rsa")->Arg(1)->Arg(0);

void BM_OpenSslVerifyOneCert(benchmark::State& state) {
  auto proxy = CreateProxy(W().User(state.range(0)), {});
  X509* cert = proxy->credential.leaf().get();
  EVP_PKEY* issuer_key = X509_get0_pubkey(W().User(state.range(0)).leaf().get());
  for (auto _ : state) benchmark::DoNotOptimize(X509_verify(cert, issuer_key));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OpenSslVerifyOneCert)->ArgName("rsa_issuer")->Arg(1)->Arg(0);

void BM_OpenSslEcKeygen(benchmark::State& state) {
  for (auto _ : state) EVP_PKEY_free(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OpenSslEcKeygen);

}  // namespace

BENCHMARK_MAIN();
