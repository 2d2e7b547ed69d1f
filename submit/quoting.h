// HTCondor's quoting rules for job arguments and environments, and ClassAd string literals.
//
// A submit file writes `arguments` and `environment` in one of two syntaxes. The new syntax is
// wrapped in double quotes: blanks separate entries, single quotes protect blanks, '' is a
// literal single quote inside single quotes and "" is a literal double quote. The old syntax has
// no surrounding double quotes: blanks separate arguments (\" is a double quote), semicolons
// separate environment entries. As condor_submit does, the job ad holds old-syntax input in the
// old attributes (Args: the arguments joined by one blank; Env: the entries joined by ';') and
// new-syntax input in the new ones, in HTCondor's canonical form without the outer double quotes
// ("V2 raw": Arguments, Environment), which SplitArgumentsV2 / SplitEnvironmentV2 read back.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace kite::submit {

using EnvEntry = std::pair<std::string, std::string>;  // name, value

// `arguments = <value>` of a submit file, either syntax. Errors (kInvalidInput) say what is wrong
// without a file position; the caller adds it.
Result<std::vector<std::string>> SplitArguments(std::string_view value);
// True when a submit value is in the new syntax (starts with a double quote).
bool IsV2Quoted(std::string_view value);
// HTCondor's V2 raw form: arguments joined by one blank; blanks and single quotes inside an
// argument sit in single-quoted sections (a single quote doubled), an empty argument is ''.
std::string JoinArgumentsV2(const std::vector<std::string>& args);
// HTCondor's V1 raw form (the Args attribute): joined by one blank, nothing escaped. REQUIRES:
// no argument holds a blank (SplitArguments of old syntax never yields one).
std::string JoinArgumentsV1(const std::vector<std::string>& args);
// Inverse of JoinArgumentsV1: the Args attribute split at blanks, nothing unescaped.
std::vector<std::string> SplitArgumentsV1Raw(std::string_view raw);
// Inverse of JoinArgumentsV2 (accepts any V2 raw text, e.g. an Arguments attribute).
Result<std::vector<std::string>> SplitArgumentsV2(std::string_view raw);

// `environment = <value>` of a submit file, either syntax. Every entry needs NAME=VALUE with a
// non-empty NAME; a later entry for the same name replaces the earlier one.
Result<std::vector<EnvEntry>> SplitEnvironment(std::string_view value);
std::string JoinEnvironmentV2(const std::vector<EnvEntry>& env);
// The Env attribute (old syntax, EnvDelim ";"): NAME=VALUE entries joined by ';'.
std::string JoinEnvironmentV1(const std::vector<EnvEntry>& env);
Result<std::vector<EnvEntry>> SplitEnvironmentV2(std::string_view raw);

// A ClassAd string literal for `s`: double-quoted, with \ " and control characters escaped.
std::string QuoteClassAdString(std::string_view s);

}  // namespace kite::submit
