// The grid job that is a glide-in: its submit description, built from what the user asks of
// `kite glidein submit` and what the desktop knows (the agent's pool address, the user's
// identity, Kite's own programs), and how `kite glidein q` shows glide-ins with their slots.
// Pure: no files are read and nothing is sent here (agent/cli/cmd_glidein.cpp does that).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"
#include "glidein/options.h"

namespace kite::glidein {

// What the user asks for.
struct GlideinRequest {
  std::string resource;           // grid_resource, "kite HOST:PORT[/BATCH]" (required)
  int count = 1;                  // glide-ins: grid jobs of one cluster
  int cpus = 1;                   // slots of each glide-in, one CPU each; asked of the batch
  int64_t memory_mib = 0;         // each glide-in's, split over its slots (0: the node's
                                  // MemTotal, and nothing asked of the batch system)
  double lifetime = 2 * 3600;     // seconds until a glide-in leaves (0: no end, no walltime)
  double idle_timeout = 10 * 60;  // seconds without a job before it leaves (0: never)
  std::string start = "true";     // the slots' START expression
  OwnerPolicy policy;             // SUSPEND, CONTINUE, PREEMPT, KILL, MAXJOBRETIREMENTTIME
};

// What the desktop supplies.
struct GlideinSetting {
  std::string agent;           // the agent's pool listener, "HOST:PORT" (the startd dials tls:)
  std::string agent_identity;  // the agent's certificate subject: the user's identity
  std::string proxy;           // x509userproxy: the proxy delegated to each grid job
  // Absolute paths of kite-glidein-bootstrap, kite-startd, kite-starter and kite-exec.
  std::string bootstrap;
  std::string startd;
  std::string starter;
  std::string exec;
  // Lowercase hex digests of kite-startd, kite-starter and kite-exec.
  std::string startd_sha256;
  std::string starter_sha256;
  std::string exec_sha256;
  // libkite_rsc.so (remote I/O, docs/remote-io.md) and its digest: staged with the programs when
  // set, so jobs with want_remote_io can run in the glide-in.
  std::string rsc_lib;
  std::string rsc_lib_sha256;
  // kite-rsc-fuse (remote I/O through the kernel) and its digest: staged as a program when set.
  std::string rsc_fuse;
  std::string rsc_fuse_sha256;
  std::string output_dir;  // where each glide-in's C.P.out and C.P.err go ($KITE_HOME/glidein)
};

// Seconds the batch system is asked for beyond a glide-in's lifetime: the bootstrap's checks
// before the startd starts, and the runs' last output after it stops taking jobs.
inline constexpr int64_t kWalltimeMarginSeconds = 300;

// A duration: "90s", "10m", "2h", "1d", sums of those ("1h30m"), or plain seconds ("3600",
// "2.5"). kInvalidInput otherwise.
Result<double> ParseSeconds(std::string_view text);

// The startd name of glide-in C.P ("glidein-C.P"): its slots are slotN@glidein-C.P, which also
// keeps two glide-ins on one node apart.
std::string GlideinStartdName(long cluster, long proc);

// The file name of glide-in C.P's pool credential ("C.P.credential"): the agent writes it to
// GlideinSetting::output_dir before the glide-in is submitted, and the glide-in takes it along as
// an input file (docs/pool.md, "Trust").
std::string GlideinCredentialName(long cluster, long proc);

// kite-glidein-bootstrap's arguments for one glide-in: the --sha256 checks, then "--" and the
// startd's flags (StartdOptions::ToArgs, less --work, which the bootstrap gives), its
// --credential being `credential` (a file in the job's directory at the site).
std::vector<std::string> BootstrapArguments(const GlideinRequest& r, const GlideinSetting& s,
                                            const std::string& startd_name,
                                            const std::string& credential);

// The submit description of `r.count` glide-ins in cluster `cluster` (one queue statement
// each, so each has its own startd name, pool credential and output files). The credentials
// themselves are the agent's to write (agent/pool_authority.h) before the cluster is submitted.
// kInvalidInput names what is wrong with the request or the setting.
Result<std::string> GlideinSubmitText(const GlideinRequest& r, const GlideinSetting& s,
                                      long cluster);

// Glide-in flooding (`kite glidein flood`, docs/broker.md): while idle vanilla jobs that
// `constraint` selects wait with no slot to take them, the agent keeps glide-ins pending at
// every site that can host them, never more than `max` pending or running. `request.resource`
// and `request.count` are the agent's to choose per site.
struct FloodRequest {
  std::string constraint;  // ClassAd expression over the idle jobs
  int max = 0;             // glide-ins pending or running at once
  GlideinRequest request;
  GlideinSetting setting;
};
// The JSON the CLI sends and the agent keeps ($KITE_HOME/flood.json), and back; kInvalidInput
// names what is missing or wrong.
std::string FloodToJson(const FloodRequest& f);
Result<FloodRequest> FloodFromJson(std::string_view text);

// `kite glidein q`: one line per glide-in job, with the slots its startd advertises now (from
// the pool's slot ads, matched by StartdName), and a totals line.
std::string FormatGlideinTable(const std::vector<classad::ClassAd>& jobs,
                               const std::vector<classad::ClassAd>& slots, bool slots_known);

}  // namespace kite::glidein
