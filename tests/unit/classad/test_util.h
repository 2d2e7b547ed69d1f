// Helpers for the ClassAd unit tests.
#pragma once

#include <string>
#include <string_view>

#include "classad/classad.h"
#include "classad/expr.h"

namespace kite::classad::testing {

// Parses and evaluates `text` with the given scopes and returns the value's ClassAd text
// ("true", "undefined", "3", "\"abc\""), or "parse error: ..." when it does not parse.
std::string EvalText(std::string_view text, const ClassAd* my = nullptr,
                     const ClassAd* target = nullptr);

// Parses `text` and returns its canonical unparse, or "parse error: ...".
std::string Canonical(std::string_view text);

// Parses an old-syntax ad, failing the test on error.
ClassAd Ad(std::string_view old_syntax);

}  // namespace kite::classad::testing
