// Symmetric matchmaking between two ads, as HTCondor's negotiator does it.
#pragma once

#include <vector>

#include <string>
#include <string_view>

#include "classad/classad.h"
#include "common/error.h"

namespace kite::classad {

// True when my.Requirements evaluates to true (or a non-zero number) with MY = my and
// TARGET = target. A missing, UNDEFINED or ERROR Requirements does not match.
bool RequirementsMet(const ClassAd& my, const ClassAd& target);
// Both ads' Requirements hold against each other.
bool Match(const ClassAd& a, const ClassAd& b);
// my.Rank evaluated against target; 0.0 when absent or not a number (booleans count 0 and 1).
double Rank(const ClassAd& my, const ClassAd& target);
// The top-level clauses of a conjunction ("a && (b && c) && d": a, b, c, d), in order, for
// condor_q -better-analyze's clause-by-clause counts. Anything else is one clause.
std::vector<const Expr*> Conjuncts(const Expr& expr);

// HTCondor's match-time substitution in a job's string: `$$(Attr)` is the machine's attribute,
// `$$(Attr:default)` the default when the machine has none, `$$([expr])` the expression evaluated
// with MY = job and TARGET = machine. Strings are put in as their text, other values as ClassAd
// literals. A reference that cannot be resolved fails (kNotFound), naming it; text without `$$(`
// comes back as it is.
kite::Result<std::string> ExpandMatchReferences(std::string_view text, const ClassAd& job,
                                                const ClassAd& machine);

}  // namespace kite::classad
