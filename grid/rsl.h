// RSL, the job description language of Globus GRAM and (as xRSL) of ARC: what both links share.
#pragma once

#include <string>
#include <string_view>

namespace kite::grid {

// `text` as an RSL string literal: in double quotes, each double quote inside doubled.
inline std::string RslQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace kite::grid
