// Old-syntax and new-syntax ClassAd text, both ways.
#include "classad/io.h"

#include "classad/internal.h"
#include "classad/parser.h"
#include "common/strings.h"

namespace kite::classad {

namespace internal {

void AppendNewSyntax(std::string& out, const ClassAd& ad) {
  if (ad.empty()) {
    out += "[]";
    return;
  }
  out += "[ ";
  bool first = true;
  for (const auto& attr : ad) {
    if (!first) out += "; ";
    first = false;
    AppendName(out, attr.name());
    out += " = ";
    AppendUnparse(out, attr.expr());
  }
  out += " ]";
}

}  // namespace internal

namespace {

// Parses old-syntax lines into `ad`. A line that does not parse ends the parse (and is returned)
// unless `bad` is given, in which case it is described there and the next line is read.
kite::Status ParseOldLines(std::string_view text, ClassAd* ad, std::vector<std::string>* bad) {
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view trimmed = kite::Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    Parser parser(line, ParseOptions{.lenient_escapes = true});
    if (auto st = parser.ParseAssignment(ad); !st) {
      auto e = st.error().Wrap("line " + std::to_string(line_no));
      if (!bad) return kite::Fail(std::move(e));
      bad->push_back(e.message());
    }
  }
  return {};
}

}  // namespace

kite::Result<ClassAd> ParseOldAd(std::string_view text) {
  ClassAd ad;
  if (auto st = ParseOldLines(text, &ad, nullptr); !st) return kite::Fail(st.error());
  return ad;
}

ClassAd ParseOldAdSkippingErrors(std::string_view text, std::vector<std::string>* bad) {
  ClassAd ad;
  (void)ParseOldLines(text, &ad, bad);
  return ad;
}

kite::Result<std::vector<ClassAd>> ParseOldAds(std::string_view text) {
  std::vector<ClassAd> ads;
  size_t start = 0, line_no = 1;
  while (start < text.size()) {
    // An ad runs until a blank line.
    size_t end = start;
    size_t lines = 0;
    while (end < text.size()) {
      size_t nl = text.find('\n', end);
      if (nl == std::string_view::npos) nl = text.size();
      ++lines;
      bool blank = kite::Trim(text.substr(end, nl - end)).empty();
      end = nl + 1;
      if (blank) break;
    }
    end = std::min(end, text.size());
    std::string_view chunk = text.substr(start, end - start);
    if (!kite::Trim(chunk).empty()) {
      auto ad = ParseOldAd(chunk);
      if (!ad) return kite::Fail(ad.error().Wrap("ad starting at line " + std::to_string(line_no)));
      ads.push_back(std::move(*ad));
    }
    line_no += lines;
    start = end;
  }
  return ads;
}

kite::Result<ClassAd> ParseNewAd(std::string_view text) {
  return Parser(text).ParseWholeRecord();
}

std::string ToOldText(const ClassAd& ad) {
  std::string out;
  ForEachVisibleAttribute(ad, [&](std::string_view name, const Expr& expr) {
    AppendName(out, name);
    out += " = ";
    AppendUnparse(out, expr);
    out.push_back('\n');
  });
  return out;
}

std::string ToNewText(const ClassAd& ad) {
  std::string out;
  bool any = false;
  ForEachVisibleAttribute(ad, [&](std::string_view name, const Expr& expr) {
    out += any ? "; " : "[ ";
    any = true;
    AppendName(out, name);
    out += " = ";
    AppendUnparse(out, expr);
  });
  out += any ? " ]" : "[]";
  return out;
}

}  // namespace kite::classad
