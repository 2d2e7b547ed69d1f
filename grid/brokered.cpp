// `$$(Name)` references in a grid job's GridResource.
#include "grid/brokered.h"

namespace kite::grid {
namespace {

// Calls `each(name, default or nullopt)` for every reference; false when one is unterminated.
template <class Each>
bool ForEachReference(std::string_view text, std::string* out, Each each) {
  size_t pos = 0;
  while (true) {
    size_t start = text.find("$$(", pos);
    if (start == std::string_view::npos) {
      if (out) out->append(text.substr(pos));
      return true;
    }
    if (out) out->append(text.substr(pos, start - pos));
    size_t close = text.find(')', start + 3);
    if (close == std::string_view::npos) return false;
    std::string_view inside = text.substr(start + 3, close - start - 3);
    std::optional<std::string> def;
    if (auto colon = inside.find(':'); colon != std::string_view::npos) {
      def = std::string(inside.substr(colon + 1));
      inside = inside.substr(0, colon);
    }
    if (!each(std::string(inside), def, out)) return true;
    pos = close + 1;
  }
}

}  // namespace

bool IsBrokered(std::string_view text) {
  return text.find("$$(") != std::string_view::npos;
}

std::vector<std::string> BrokeredNames(std::string_view text) {
  std::vector<std::string> names;
  ForEachReference(text, nullptr, [&](const std::string& name, const auto&, std::string*) {
    names.push_back(name);
    return true;
  });
  return names;
}

Result<std::string> ExpandBrokered(
    std::string_view text,
    const std::function<std::optional<std::string>(const std::string&)>& value) {
  std::string out, missing;
  bool whole = ForEachReference(
      text, &out,
      [&](const std::string& name, const std::optional<std::string>& def, std::string* o) {
        auto v = value(name);
        if (!v) v = def;
        if (!v) {
          missing = name;
          return false;
        }
        o->append(*v);
        return true;
      });
  if (!whole) {
    return Fail(ErrorCode::kInvalidInput,
                "'" + std::string(text) + "': a $$( without its closing parenthesis");
  }
  if (!missing.empty()) {
    return Fail(ErrorCode::kNotFound,
                "not matched to a site yet ($$(" + missing + ") has no value)");
  }
  return out;
}

Result<std::string> JobGridResource(const classad::ClassAd& job) {
  auto resource = job.EvaluateString("GridResource");
  if (!resource) return Fail(ErrorCode::kNotFound, "the job has no GridResource");
  if (!IsBrokered(*resource)) return *resource;
  return ExpandBrokered(
      *resource, [&job](const std::string& name) { return job.EvaluateString("MATCH_" + name); });
}

}  // namespace kite::grid
