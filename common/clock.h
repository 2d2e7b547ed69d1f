// Time and randomness as Kite reads them: one home for "now", for printing a time in UTC, and for
// random identifiers.
//
// Code that needs to be tested against a clock of the test's choosing takes a `const Clock&`
// (or a std::function<double()>) and production passes SystemClock().
#pragma once

#include <cstddef>
#include <string>

namespace kite {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Wall() const = 0;    // seconds since the Unix epoch
  virtual double Steady() const = 0;  // seconds on a clock that never jumps (intervals, timeouts)
};

// The real clock.
const Clock& SystemClock();
double WallNow();    // SystemClock().Wall()
double SteadyNow();  // SystemClock().Steady()

// "2026-11-25 10:04:05 UTC".
std::string FormatUtc(double unix_seconds);

// `bytes` bytes from the kernel's CSPRNG as lower-case hex (2 * bytes characters): request ids,
// job ids at a site, tokens. Aborts only when the kernel cannot give randomness, which is a bug of
// the machine, not an input.
std::string RandomHex(size_t bytes);

}  // namespace kite
