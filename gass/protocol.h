// The GASS protocol's pure pieces (docs/gass.md): request targets, Range and Content-Range
// headers, the names a job may expose, and the protocol's constants. No I/O: the server, the
// client and the fuzzer call these directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::gass {

// Sent by both ends on every request and response; a request carrying another value gets a 400.
inline constexpr std::string_view kVersionHeader = "Kite-Gass-Version";
inline constexpr std::string_view kVersion = "1";
// Response header on PUT: the file's size after the write.
inline constexpr std::string_view kFileSizeHeader = "Kite-File-Size";
// Request header on PUT: after the write, cut (or extend with zeros) the file to this length.
inline constexpr std::string_view kTruncateHeader = "Kite-Truncate";
// Request header on an empty PUT: "1" makes the name a folder (and those above it) instead of a
// file. Only names a job may write folders at (gass::WritableFile::tree).
inline constexpr std::string_view kFolderHeader = "Kite-Folder";

// The largest PUT body the server accepts (larger: 413). Writers send bounded chunks.
inline constexpr uint64_t kMaxPutBody = 16u << 20;
// Offsets and lengths must stay below this (a signed 64-bit file offset).
inline constexpr uint64_t kMaxOffset = INT64_MAX;

// "/jobs/<job_id>/<name>", split.
struct Target {
  std::string job_id;
  std::string name;
};

// A job id: 1..128 characters of [A-Za-z0-9._~+-], not "." or "..".
bool IsValidJobId(std::string_view id);
// A file name: 1..255 characters, segments of the job-id alphabet separated by single '/', no
// segment "." or "..". Names are compared byte for byte; nothing is decoded.
bool IsValidName(std::string_view name);

// Parses a request target literally: no percent-decoding (a '%' anywhere is refused), no query
// or fragment, no dot segments, no empty segments. kInvalidInput otherwise.
Result<Target> ParseTarget(std::string_view target);
// The target for `job_id` and `name` (both assumed valid).
std::string MakeTarget(std::string_view job_id, std::string_view name);

// A half-open byte interval [first, first + length).
struct ByteRange {
  uint64_t first = 0;
  uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

// One range of a "Range: bytes=..." header as written: "A-B" (first and last), "A-" (first
// only) or "-N" (suffix: last N bytes).
struct RangeRequest {
  std::optional<uint64_t> first;
  std::optional<uint64_t> last;  // with `first`: the last byte; without: the suffix length
  bool operator==(const RangeRequest&) const = default;
};
// Parses "bytes=A-B", "bytes=A-" or "bytes=-N" (spaces around the pieces allowed). Several
// ranges, other units or A > B are kInvalidInput.
Result<RangeRequest> ParseRange(std::string_view header);
// The bytes a range selects from a file of `size`, clipped to the file; nullopt when it selects
// nothing (first at or past the end, or a zero suffix): the server answers 416.
std::optional<ByteRange> ResolveRange(const RangeRequest& range, uint64_t size);

// A Content-Range header "bytes A-B/N", "bytes A-B/*" or "bytes */N".
struct ContentRange {
  std::optional<ByteRange> range;         // absent for "*/N"
  std::optional<uint64_t> complete_size;  // absent for ".../*"
  bool operator==(const ContentRange&) const = default;
};
// Parses a Content-Range header (requests: "bytes A-B/*"; responses: "bytes A-B/N",
// "bytes */N"). A > B, B >= N, "*/*" and overflow are kInvalidInput.
Result<ContentRange> ParseContentRange(std::string_view header);
// Formats "bytes A-B/N" ("bytes */N" when `range` is empty), or with "/*" when size is absent.
std::string FormatContentRange(std::optional<ByteRange> range, std::optional<uint64_t> size);

// A non-negative decimal below kMaxOffset: digits only, no sign, no spaces. nullopt otherwise.
std::optional<uint64_t> ParseDecimal(std::string_view text);

}  // namespace kite::gass
