// Logical lines of a submit file and the map of its sources.
#include "submit/lines.h"

#include <utility>

#include "common/strings.h"

namespace kite::submit {

SourceMap::SourceMap(std::string name, std::string dir) {
  sources_.push_back(Source{std::move(name), std::move(dir)});
}

Result<int> SourceMap::Add(std::string name, std::string dir) {
  if (sources_.size() >= static_cast<size_t>(kMaxSources)) {
    return Fail(ErrorCode::kInvalidInput,
                "more than " + std::to_string(kMaxSources - 1) + " includes in one submit file");
  }
  sources_.push_back(Source{std::move(name), std::move(dir)});
  return static_cast<int>(sources_.size() - 1) * kLinesPerSource;
}

std::string SourceMap::Where(int line) const {
  size_t source = line < 0 ? 0 : static_cast<size_t>(line / kLinesPerSource);
  if (source >= sources_.size()) source = 0;
  return sources_[source].name + ":" + std::to_string(line % kLinesPerSource);
}

const std::string& SourceMap::DirOf(int line) const {
  size_t source = line < 0 ? 0 : static_cast<size_t>(line / kLinesPerSource);
  return sources_[source < sources_.size() ? source : 0].dir;
}

Error LineError(const SourceMap& map, int line, std::string_view message) {
  return Error(ErrorCode::kInvalidInput, map.Where(line) + ": " + std::string(message));
}

bool IsBlankOrComment(std::string_view text) {
  auto t = Trim(text);
  return t.empty() || t.front() == '#';
}

Result<std::vector<LogicalLine>> SplitLines(std::string_view text, const SourceMap& map, int base,
                                            int depth) {
  std::vector<LogicalLine> out;
  bool continuing = false;
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view phys = text.substr(pos, end - pos);
    pos = end + 1;
    if (++number >= SourceMap::kLinesPerSource) {
      return Fail(LineError(map, base + number - 1, "more lines than a submit file may have"));
    }
    if (phys.find('\0') != std::string_view::npos) {
      return Fail(LineError(map, base + number, "NUL character in submit file"));
    }
    if (!phys.empty() && phys.back() == '\r') phys.remove_suffix(1);
    bool comment = !continuing && !Trim(phys).empty() && Trim(phys).front() == '#';
    bool continues = !comment && !phys.empty() && phys.back() == '\\';
    if (continues) phys.remove_suffix(1);
    if (continuing) {
      out.back().text.append(phys);
    } else {
      out.push_back(LogicalLine{std::string(phys), base + number, depth});
    }
    continuing = continues;
  }
  return out;
}

}  // namespace kite::submit
