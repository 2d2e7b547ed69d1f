// Policy evaluation.
#include "agent/policy.h"

#include "agent/queue.h"
#include "classad/expr.h"

namespace kite::agent {
namespace {

// Evaluates attribute `name` of the job; true only for a true (or non-zero) value.
bool IsTrue(const Job& job, std::string_view name) {
  if (!job.ad.Lookup(name)) return false;
  return job.ad.Evaluate(name).IsTrue();
}

std::string ExprText(const Job& job, std::string_view name) {
  const auto* e = job.ad.Lookup(name);
  return e ? classad::Unparse(*e) : "";
}

std::string PolicyReason(const Job& job, std::string_view attr, std::string_view reason_attr) {
  if (auto r = job.ad.EvaluateString(reason_attr); r && !r->empty()) return *r;
  return "The job attribute " + std::string(attr) + " expression '" + ExprText(job, attr) +
         "' evaluated to TRUE";
}

}  // namespace

bool HasPeriodicPolicy(const Job& job) {
  return job.ad.Lookup("PeriodicRemove") || job.ad.Lookup("PeriodicHold") ||
         job.ad.Lookup("PeriodicRelease");
}

PolicyDecision EvaluatePeriodic(const Job& job) {
  PolicyDecision d;
  if (job.status == kRemoved || job.status == kCompleted) return d;
  if (IsTrue(job, "PeriodicRemove")) {
    d.action = PolicyDecision::Action::kRemove;
    d.reason = PolicyReason(job, "PeriodicRemove", "PeriodicRemoveReason");
    return d;
  }
  if ((job.status == kIdle || RunUnderWay(job.status)) && IsTrue(job, "PeriodicHold")) {
    d.action = PolicyDecision::Action::kHold;
    d.reason = PolicyReason(job, "PeriodicHold", "PeriodicHoldReason");
    d.code = kHoldJobPolicy;
    d.subcode = static_cast<int>(job.ad.EvaluateInt("PeriodicHoldSubCode").value_or(0));
    return d;
  }
  if (job.status == kHeld && IsTrue(job, "PeriodicRelease")) {
    d.action = PolicyDecision::Action::kRelease;
    d.reason = "The job attribute PeriodicRelease expression '" + ExprText(job, "PeriodicRelease") +
               "' evaluated to TRUE";
  }
  return d;
}

ExitDecision EvaluateOnExit(const Job& job) {
  ExitDecision d;
  if (IsTrue(job, "OnExitHold")) {
    d.action = ExitDecision::Action::kHold;
    d.reason = PolicyReason(job, "OnExitHold", "OnExitHoldReason");
    d.subcode = static_cast<int>(job.ad.EvaluateInt("OnExitHoldSubCode").value_or(0));
    return d;
  }
  if (job.ad.Lookup("OnExitRemove")) {
    auto v = job.ad.Evaluate("OnExitRemove");
    bool b = true;
    // Only a definite false requeues; UNDEFINED/ERROR keep HTCondor's default (remove).
    if (v.BoolEquivalent(&b) && !b) d.action = ExitDecision::Action::kRequeue;
  }
  return d;
}

bool EndRun(JobQueue& queue, Job& job, const ExecStatus& outcome) {
  queue.MarkExited(job, outcome);
  auto d = EvaluateOnExit(job);
  switch (d.action) {
    case ExitDecision::Action::kHold:
      (void)queue.Hold(job, d.reason, kHoldJobPolicy, d.subcode);
      return false;
    case ExitDecision::Action::kRequeue:
      (void)queue.SetIdle(job, "");
      return false;
    case ExitDecision::Action::kComplete:
      return queue.MarkCompleted(job).has_value();
  }
  return false;
}

}  // namespace kite::agent
