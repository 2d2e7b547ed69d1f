// The system clock, UTC formatting and random identifiers.
#include "common/clock.h"

#include <sys/random.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace kite {
namespace {

class RealClock final : public Clock {
 public:
  double Wall() const override {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
  }
  double Steady() const override {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

double WallNow() {
  return SystemClock().Wall();
}

double SteadyNow() {
  return SystemClock().Steady();
}

std::string FormatUtc(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n <= 0) std::abort();  // no randomness from the kernel: nothing safe to hand out
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace kite
