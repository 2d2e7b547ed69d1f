// The grid-mapfile: which local accounts each certificate subject may use.
//
// Format (as Globus): one entry per line, `"<DN>" account[,account...]`; the DN may be unquoted
// when it has no blanks; inside quotes `\"` and `\\` escape; blank lines and lines starting with
// '#' are ignored. The first account is the default. A DN listed twice gets the union, in order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"

namespace kite::credentials {

class GridMap {
 public:
  // Fails with kInvalidInput naming `source:line` and what is wrong.
  static Result<GridMap> Parse(std::string_view text, std::string_view source = "grid-mapfile");
  static Result<GridMap> Load(const std::string& path);

  // Accounts `dn` may use (empty when not listed). Matching is exact on the Globus-form DN.
  const std::vector<std::string>& Accounts(std::string_view dn) const;
  std::optional<std::string> DefaultAccount(std::string_view dn) const;
  bool Allows(std::string_view dn, std::string_view account) const;
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<std::string, std::vector<std::string>> map_;
};

}  // namespace kite::credentials
