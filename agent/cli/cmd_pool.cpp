// `kite pool credential create|revoke`: pool credentials for startds the user starts by hand
// (docs/pool.md, "Trust"), as condor_token_create is for an HTCondor pool. Glide-ins get theirs
// from `kite glidein submit`; the local startd from the agent.
//
//   kite pool credential create --name NAME [--slots N] [--lifetime DUR] [-o FILE]
//   kite pool credential revoke ID
#include <cstdio>
#include <string>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "common/clock.h"
#include "common/files.h"
#include "glidein/glidein_job.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

struct CreateArgs {
  std::string name, lifetime = "7d", out;
  int slots = 1;
};

void Create(const CreateArgs& a) {
  auto seconds = glidein::ParseSeconds(a.lifetime);
  if (!seconds || *seconds < 1) Die("--lifetime: give a duration of at least a second (7d, 12h)");
  auto client = ConnectOrDie();
  auto r =
      client->PostJson("/v1/pool/credential",
                       {{"create", json::object{{"name", a.name},
                                                {"slots", a.slots},
                                                {"lifetime", static_cast<int64_t>(*seconds)}}}});
  if (!r) Die(r.error());
  std::string text(r->at("credential").as_string());
  std::string id(r->at("id").as_string());
  double expires = static_cast<double>(r->at("expires").to_number<int64_t>());
  if (a.out.empty()) {
    std::printf("%s\n", text.c_str());
  } else if (auto st = WriteFileAtomic(a.out, text + "\n", 0600); !st) {
    Die(st.error().Wrap("the credential was issued (id " + id + ") but not written"));
  }
  std::fprintf(stderr,
               "credential %s for startd '%s' (%d slot(s)), valid until %s; give it to "
               "kite-startd --credential; kite pool credential revoke %s withdraws it\n",
               id.c_str(), a.name.c_str(), a.slots, FormatUtc(expires).c_str(), id.c_str());
}

void Revoke(const std::string& id) {
  auto client = ConnectOrDie();
  auto r = client->PostJson("/v1/pool/credential", {{"revoke", id}});
  if (!r) Die(r.error());
  std::printf("credential %s revoked: a startd holding it is refused from now on\n", id.c_str());
}

}  // namespace

void RegisterPoolCommands(CLI::App& app) {
  auto* p = app.add_subcommand("pool", "the personal pool's credentials");
  p->require_subcommand(1);
  auto* c = p->add_subcommand(
      "credential", "pool credentials for startds started by hand (glide-ins get their own)");
  c->require_subcommand(1);
  static CreateArgs a;
  auto* create = c->add_subcommand(
      "create", "issue a credential a kite-startd presents to join this agent's pool over TLS");
  create->add_option("--name", a.name, "the startd's name (its slots are slotN@NAME)")->required();
  create->add_option("--slots", a.slots, "slots it may offer (default 1)")
      ->check(CLI::Range(1, 1024));
  create->add_option("--lifetime", a.lifetime, "how long it holds (default 7d)");
  create->add_option("-o,--out", a.out, "write it to FILE (mode 0600) instead of standard output");
  create->callback([] { Create(a); });
  static std::string id;
  auto* revoke = c->add_subcommand("revoke", "refuse a credential from now on");
  revoke->add_option("id", id, "the credential's id (create prints it)")->required();
  revoke->callback([] { Revoke(id); });
}

}  // namespace kite::cli
