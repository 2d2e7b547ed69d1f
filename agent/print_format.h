// condor_q's custom output forms: `-af[:MODS] EXPR...`, `-format FMT EXPR` (repeatable) and
// `-long`, for `kite q` and `kite history`.
//
// Parsing is apart from printing so the CLI refuses a malformed string before it asks for any
// job, and so the parsers can be fuzzed. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "classad/expr.h"
#include "common/error.h"

namespace kite::agent {

// -af / -autoformat. Modifiers, as condor_q's "-af:jlh,t": j the job id first, l each value
// labelled "Expr = value", h a header line of the expressions, t tab-separated, ',' comma-
// separated, n each value on its own line, g a blank line after each job, V strings quoted, r
// expressions shown unevaluated.
struct AutoFormat {
  bool job_id = false;
  bool labels = false;
  bool header = false;
  bool quoted = false;
  bool raw = false;
  bool blank_after = false;
  std::string separator = " ";
  std::string line_end = "\n";
  std::vector<std::string> names;  // the expressions as the user wrote them
  std::vector<classad::ExprPtr> exprs;
};

// Parses the modifier letters (what follows "-af:") and the expressions. kInvalidInput naming
// the bad letter or expression; no expressions at all is an error too.
Result<AutoFormat> ParseAutoFormat(std::string_view modifiers,
                                   const std::vector<std::string>& exprs);

// One -format FMT EXPR: the text of FMT around at most one printf conversion. Conversions:
// %d %i %u %x %X %o %c (integers), %f %e %E %g %G (reals), %s (a string, or any value's text),
// %v (a value, strings unquoted) and %V (a value as a ClassAd literal), with the flags "-+ #0",
// a width and a precision (each up to 4 digits); %% is a '%'. The escapes \n \t \\ \" are read
// as C reads them, since shells pass them through.
struct PrintfItem {
  std::string before;   // literal text before the conversion (escapes resolved)
  std::string after;    // literal text after it
  char conversion = 0;  // 0: none; the format prints only its text
  std::string flags;
  int width = -1;      // -1: none
  int precision = -1;  // -1: none
  std::string name;    // the expression as written
  classad::ExprPtr expr;
};

// Parses one -format pair. kInvalidInput naming the fault ("-format '%q': unknown conversion %q").
Result<PrintfItem> ParsePrintfItem(std::string_view format, std::string_view expr);

// One job's line(s). `first` asks for the -af header when it has one.
std::string FormatAutoLine(const AutoFormat& af, const classad::ClassAd& ad, int cluster, int proc,
                           bool first);
std::string FormatPrintf(const std::vector<PrintfItem>& items, const classad::ClassAd& ad);
// -long: the ad in old syntax, then a blank line.
std::string FormatLong(const classad::ClassAd& ad);

}  // namespace kite::agent
