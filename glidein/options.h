// The startd's settings, and how they cross from whoever starts a kite-startd (the agent for the
// local slots, the glide-in bootstrap) to its flags: ToArgs writes every field as a flag, AddFlags
// reads them back, so a new setting is a field here and a line in each of the two (options.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kite::glidein {

// The owner's policy besides START: HTCondor's SUSPEND, CONTINUE, PREEMPT, KILL and
// MAXJOBRETIREMENTTIME, as ClassAd text evaluated in the slot's ad with its job as TARGET. The
// defaults are HTCondor's: never suspend or preempt.
struct OwnerPolicy {
  std::string suspend = "false";  // true while Busy: the job is stopped (SIGSTOP) for now
  std::string cont = "true";      // true while Suspended: it goes on (SIGCONT)
  std::string preempt = "false";  // true while Busy or Suspended: it is vacated, after retirement
  std::string kill = "false";     // true while it is being vacated: SIGKILL without the grace
  std::string retirement = "0";   // seconds a preempted job may still run to its end
  // true while Busy: a job with transparent checkpoints takes one (docs/checkpoints.md); the slot
  // ad's LastPeriodicCheckpoint says when the last was asked (or the job started)
  std::string periodic_checkpoint = "false";
  bool operator==(const OwnerPolicy&) const = default;
};

struct StartdOptions {
  std::string agent;        // where to dial: "unix:/path/pool.sock" or "tls:HOST:PORT"
  std::string name;         // the startd's name ("" = this host's name); slots are slotN@name
  int slots = 1;            // slots advertised
  int cpus_per_slot = 1;    // Cpus of each slot
  int64_t memory_mib = 0;   // total, split evenly over the slots (0 = MemTotal of /proc/meminfo)
  int64_t disk_kib = 0;     // total, split evenly over the slots (0 = free space of `work`)
  std::string work;         // sandboxes go in work/<job>-<run>/ (required)
  double lifetime = 0;      // seconds until the startd leaves (0 = no end)
  double idle_timeout = 0;  // seconds with no run before it leaves (0 = never)
  double agent_gone_timeout = 0;  // seconds without the agent before it leaves (0 = never)
  std::string start = "true";     // the owner's START expression
  OwnerPolicy policy;             // SUSPEND, CONTINUE, PREEMPT, KILL, MAXJOBRETIREMENTTIME
  std::string resource;           // GlideinResource of the slots ("" = the local slots: absent)
  double kill_grace = 5;          // seconds between SIGTERM and SIGKILL when a run is vacated
  double update_interval = 10;    // seconds between slot ad updates
  // tls: only. The credential the startd presents, re-read on every dial ("" = $X509_USER_PROXY,
  // else /tmp/x509up_u<uid>); the trusted CAs ("" = $X509_CERT_DIR or the default directory);
  // the identity (Globus-form DN) the agent must speak for: required with tls:.
  std::string proxy;
  std::string ca_dir;
  std::string agent_identity;
  // The pool credential the agent issued this startd (docs/pool.md, "Trust"), re-read on every
  // dial and sent in its hello; without one the agent refuses it.
  std::string credential;
  std::string log_file;  // "" = standard error
  std::string log_level = "info";

  // The flags that give a kite-startd exactly these options (without the program name).
  std::vector<std::string> ToArgs() const;
  // Declares the flags ToArgs writes on `app`, each filling its field of *this (which must
  // outlive the parse). --agent and --work are required.
  void AddFlags(CLI::App& app);

  bool operator==(const StartdOptions&) const = default;
};

}  // namespace kite::glidein
