// HTCondor's numbers that the agent <-> gridmanager messages carry (docs/api.md, "The
// gridmanager's API"). One home for them on both ends of the link.
#pragma once

namespace kite::grid {

// HTCondor's JobStatus values, as grid/jobs lists them and grid/update results return them.
inline constexpr int kStatusLeftQueue = 0;  // Kite's: the job left the queue (no ad follows)
inline constexpr int kStatusIdle = 1;
inline constexpr int kStatusRunning = 2;
inline constexpr int kStatusRemoved = 3;
inline constexpr int kStatusCompleted = 4;
inline constexpr int kStatusHeld = 5;

// HTCondor's HoldReasonCode values a gridmanager holds jobs with.
inline constexpr int kHoldGridError = 2;        // GlobusGramError: the site refused or failed it
inline constexpr int kHoldCredentialError = 4;  // CorruptedCredential: proxy missing, expired or
                                                // refused

// HTCondor's user-log event codes a gridmanager writes.
inline constexpr int kEventGridSubmit = 27;  // "Job submitted to grid resource"

}  // namespace kite::grid
