// Parsers and formatters of the GASS protocol's targets and byte-range headers.
#include "gass/protocol.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace kite::gass {
namespace {

constexpr size_t kMaxJobIdLength = 128;
constexpr size_t kMaxNameLength = 255;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '+' || c == '-';
}

bool IsValidSegment(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

// Strips a case-insensitive "bytes" unit and what must follow it (`sep`), or nullopt.
std::optional<std::string_view> AfterUnit(std::string_view header, char sep) {
  std::string_view s = Trim(header);
  constexpr std::string_view kUnit = "bytes";
  if (s.size() <= kUnit.size() || !EqualsIgnoreCase(s.substr(0, kUnit.size()), kUnit)) {
    return std::nullopt;
  }
  s.remove_prefix(kUnit.size());
  if (sep == '=') {
    s = Trim(s);
    if (s.empty() || s.front() != '=') return std::nullopt;
  } else if (s.front() != ' ') {
    return std::nullopt;
  }
  s.remove_prefix(1);
  return Trim(s);
}

// "A-B" with both present and A <= B, as a ByteRange.
std::optional<ByteRange> ParseClosedRange(std::string_view s) {
  size_t dash = s.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto first = ParseDecimal(Trim(s.substr(0, dash)));
  auto last = ParseDecimal(Trim(s.substr(dash + 1)));
  if (!first || !last || *first > *last) return std::nullopt;
  return ByteRange{*first, *last - *first + 1};
}

}  // namespace

bool IsValidJobId(std::string_view id) {
  return id.size() <= kMaxJobIdLength && IsValidSegment(id);
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    std::string_view seg =
        name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    if (!IsValidSegment(seg)) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

Result<Target> ParseTarget(std::string_view target) {
  constexpr std::string_view kPrefix = "/jobs/";
  if (!StartsWith(target, kPrefix)) {
    return Fail(ErrorCode::kInvalidInput, "target does not start with /jobs/");
  }
  std::string_view rest = target.substr(kPrefix.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidInput, "target names no file");
  }
  std::string_view job = rest.substr(0, slash);
  std::string_view name = rest.substr(slash + 1);
  if (!IsValidJobId(job)) return Fail(ErrorCode::kInvalidInput, "invalid job id in target");
  if (!IsValidName(name)) return Fail(ErrorCode::kInvalidInput, "invalid file name in target");
  return Target{std::string(job), std::string(name)};
}

std::string MakeTarget(std::string_view job_id, std::string_view name) {
  return fmt::format("/jobs/{}/{}", job_id, name);
}

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');  // 19 digits cannot overflow 64 bits
  }
  if (v >= kMaxOffset) return std::nullopt;
  return v;
}

Result<RangeRequest> ParseRange(std::string_view header) {
  auto spec = AfterUnit(header, '=');
  if (!spec) return Fail(ErrorCode::kInvalidInput, "Range is not \"bytes=...\"");
  if (spec->find(',') != std::string_view::npos) {
    return Fail(ErrorCode::kInvalidInput, "several ranges are not supported");
  }
  size_t dash = spec->find('-');
  if (dash == std::string_view::npos) return Fail(ErrorCode::kInvalidInput, "Range lacks '-'");
  std::string_view a = Trim(spec->substr(0, dash));
  std::string_view b = Trim(spec->substr(dash + 1));
  RangeRequest r;
  if (!a.empty()) {
    r.first = ParseDecimal(a);
    if (!r.first) return Fail(ErrorCode::kInvalidInput, "bad first byte in Range");
  }
  if (!b.empty()) {
    r.last = ParseDecimal(b);
    if (!r.last) return Fail(ErrorCode::kInvalidInput, "bad last byte in Range");
  }
  if (!r.first && !r.last) return Fail(ErrorCode::kInvalidInput, "empty Range");
  if (r.first && r.last && *r.first > *r.last) {
    return Fail(ErrorCode::kInvalidInput, "Range ends before it starts");
  }
  return r;
}

std::optional<ByteRange> ResolveRange(const RangeRequest& range, uint64_t size) {
  if (!range.first) {  // suffix: the last N bytes
    uint64_t n = std::min(range.last.value_or(0), size);
    if (n == 0) return std::nullopt;
    return ByteRange{size - n, n};
  }
  if (*range.first >= size) return std::nullopt;
  uint64_t last = std::min(range.last.value_or(size - 1), size - 1);
  return ByteRange{*range.first, last - *range.first + 1};
}

Result<ContentRange> ParseContentRange(std::string_view header) {
  auto spec = AfterUnit(header, ' ');
  if (!spec) return Fail(ErrorCode::kInvalidInput, "Content-Range is not \"bytes ...\"");
  size_t slash = spec->find('/');
  if (slash == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidInput, "Content-Range lacks '/'");
  }
  std::string_view range_text = Trim(spec->substr(0, slash));
  std::string_view size_text = Trim(spec->substr(slash + 1));
  ContentRange cr;
  if (range_text != "*") {
    cr.range = ParseClosedRange(range_text);
    if (!cr.range) return Fail(ErrorCode::kInvalidInput, "bad range in Content-Range");
  }
  if (size_text != "*") {
    cr.complete_size = ParseDecimal(size_text);
    if (!cr.complete_size) return Fail(ErrorCode::kInvalidInput, "bad size in Content-Range");
  }
  if (!cr.range && !cr.complete_size) {
    return Fail(ErrorCode::kInvalidInput, "Content-Range \"*/*\" says nothing");
  }
  if (cr.range && cr.complete_size && cr.range->first + cr.range->length > *cr.complete_size) {
    return Fail(ErrorCode::kInvalidInput, "Content-Range ends past the complete size");
  }
  return cr;
}

std::string FormatContentRange(std::optional<ByteRange> range, std::optional<uint64_t> size) {
  std::string r = range ? fmt::format("{}-{}", range->first, range->first + range->length - 1)
                        : std::string("*");
  std::string s = size ? std::to_string(*size) : std::string("*");
  return fmt::format("bytes {}/{}", r, s);
}

}  // namespace kite::gass
