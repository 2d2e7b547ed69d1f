// HTCondor's numbers, as Kite uses them, in one place: JobStatus, JobUniverse, HoldReasonCode and
// the user log's event codes. Kite's job ads and user logs carry HTCondor's own values so that
// HTCondor users and tools read them without a dictionary; never renumber one.
#pragma once

namespace kite {

// JobStatus.
enum JobStatus : int {
  kIdle = 1,
  kRunning = 2,
  kRemoved = 3,
  kCompleted = 4,
  kHeld = 5,
  kSuspended = 7,  // a pool job its startd's owner policy stopped for now (SIGSTOP)
};

// Running or Suspended: a run is under way (a suspended job's run goes on once continued).
inline bool RunUnderWay(int status) {
  return status == kRunning || status == kSuspended;
}

// JobUniverse.
// 7 is HTCondor's scheduler universe, where condor_dagman runs: Kite's DAGs (agent/dags.h).
enum Universe : int {
  kUniverseVanilla = 5,
  kUniverseScheduler = 7,
  kUniverseGrid = 9,
  kUniverseLocal = 12
};

// HoldReasonCode (HTCondor's CONDOR_HOLD_CODE names in the comments).
enum HoldCode : int {
  kHoldQueueDamage = 0,            // Unspecified: Kite's code for a job ad that did not load
  kHoldUserRequest = 1,            // UserRequest
  kHoldGridError = 2,              // GlobusGramError: the site refused or failed the job
  kHoldJobPolicy = 3,              // JobPolicy
  kHoldCorruptedCredential = 4,    // CorruptedCredential: expired, missing or refused proxy
  kHoldFailedToCreateProcess = 6,  // FailedToCreateProcess
  kHoldUnableToOpenOutput = 7,     // UnableToOpenOutput
  kHoldUnableToOpenInput = 8,      // UnableToOpenInput
  kHoldTransferOutputError = 12,   // TransferOutputError
  kHoldTransferInputError = 13,    // TransferInputError
  kHoldIwdError = 14,              // IwdError
  kHoldSubmittedOnHold = 15,       // SubmittedOnHold
};

// The user log's event numbers (ULOG_*).
enum EventCode : int {
  kEventSubmit = 0,
  kEventExecute = 1,
  kEventExecutableError = 2,
  kEventCheckpointed = 3,
  kEventEvicted = 4,
  kEventTerminated = 5,
  kEventGeneric = 8,
  kEventAborted = 9,
  kEventSuspended = 10,
  kEventUnsuspended = 11,
  kEventHeld = 12,
  kEventReleased = 13,
  kEventJobDisconnected = 22,
  kEventJobReconnected = 23,
  kEventJobReconnectFailed = 24,
  kEventGridSubmit = 27,
};

}  // namespace kite
