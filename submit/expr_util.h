// Small ClassAd and number helpers the submit language needs: HTCondor's "an integer, or an
// expression that evaluates to one", sizes with units, and parenthesising an expression before
// joining it with && or ||. Internal to kite_submit.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "classad/value.h"
#include "common/error.h"

namespace kite::submit {

// Parses and evaluates `text` with no ad in scope; an error when it does not parse.
Result<classad::Value> EvalText(std::string_view text);

// HTCondor's string_is_long_param: a whole number, or an expression evaluating to an integer,
// a real (truncated) or a boolean (0/1). nullopt otherwise.
std::optional<long long> EvalInteger(std::string_view text);
// The same for a real number.
std::optional<double> EvalReal(std::string_view text);

// HTCondor's parse_int64_bytes: "2", "1.5", "2GB", "512 M", "8 gb", "100K" in units of
// `base_bytes` (1 MiB for memory, 1 KiB for disk), rounded up; a number without a unit is already
// in those units. Also accepts a unit of B, KiB, MiB, GiB, TiB. nullopt when `text` is not a
// number with an optional unit (it may then be a ClassAd expression).
std::optional<int64_t> ParseBytes(std::string_view text, int64_t base_bytes);

enum class JoinOp { kAnd, kOr };
// `expr` ready to be joined with `op`: wrapped in parentheses when its top-level operator binds
// less tightly (a || b before &&, a ? b : c before either), as condor_submit does.
std::string WrapForJoin(std::string_view expr, JoinOp op);

// Lower-case names of the attributes `expr` refers to (TARGET.X and unscoped X; with
// `include_my`, MY.X too), function names and keywords left out. Empty when it does not parse.
std::set<std::string> ReferencedNames(std::string_view expr, bool include_my = false);

// The value of a ClassAd string literal ("a \"b\"" -> a "b"), or nullopt when `expr` is not one.
std::optional<std::string> StringLiteral(std::string_view expr);

// The canonical ClassAd text of `text` (as condor_submit stores an expression it parsed), or
// `text` unchanged when it does not parse.
std::string CanonicalExpr(std::string_view text);

}  // namespace kite::submit
