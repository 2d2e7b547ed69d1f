// Text forms of ClassAds: HTCondor's old syntax (condor_q -l), new syntax ([ a = 1; ... ]) and
// the JSON of condor_q -json, both ways.
//
// Writers show an ad as its user sees it: its own attributes in insertion order, then those of
// its chained parents that it does not override.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "classad/expr.h"
#include "common/error.h"

namespace kite::classad {

// Old syntax: one "Name = expr" per line; blank lines and lines starting with '#' are skipped.
// Errors name the line, e.g. "line 3: expected '=' after attribute name at column 5".
// Unknown backslash escapes in strings are kept as text, as HTCondor writes them.
kite::Result<ClassAd> ParseOldAd(std::string_view text);
// As ParseOldAd, but a line that does not parse is left out and described in `bad` ("line 3:
// ..."), so whatever else the text holds is kept (reading stored ads after damage).
ClassAd ParseOldAdSkippingErrors(std::string_view text, std::vector<std::string>* bad);
// Several old-syntax ads separated by blank lines (condor_q -l output).
kite::Result<std::vector<ClassAd>> ParseOldAds(std::string_view text);
// New syntax: "[ a = 1; b = "x" ]".
kite::Result<ClassAd> ParseNewAd(std::string_view text);

std::string ToOldText(const ClassAd& ad);
// "[ a = 1; b = "x" ]" on one line.
std::string ToNewText(const ClassAd& ad);

enum class JsonStyle {
  kCompact,  // {"a":1,"b":"x"}
  kPretty,   // condor_q -json layout: one attribute per line, two-space indent
};

// Appends the ad as a JSON object. Literals become JSON values (UNDEFINED is null), lists become
// arrays, records objects, and any other expression the string "\/Expr(<unparsed>)\/".
void AppendJson(std::string& out, const ClassAd& ad, JsonStyle style = JsonStyle::kCompact);
// Appends one member, "name":value, with no separator: the caller writes the braces and commas.
// Lets a caller combine a proc's own members with a cached fragment of its cluster ad.
void AppendJsonMember(std::string& out, std::string_view name, const Expr& expr);
// Appends the ad's OWN attributes as comma-separated members, without braces.
void AppendJsonMembers(std::string& out, const ClassAd& ad);
// Appends the JSON form of one expression.
void AppendJsonValue(std::string& out, const Expr& expr);
// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(std::string& out, std::string_view s);

// One JSON object; "\/Expr(...)\/" strings are parsed back into expressions.
kite::Result<ClassAd> ParseJsonAd(std::string_view text);
// A JSON array of objects (condor_q -json output), or a single object.
kite::Result<std::vector<ClassAd>> ParseJsonAds(std::string_view text);

// Calls fn(name, expr) for each attribute the ad shows: its own, then unshadowed parents'.
template <typename Fn>
void ForEachVisibleAttribute(const ClassAd& ad, Fn&& fn) {
  for (const auto& attr : ad) fn(attr.name(), attr.expr());
  for (const ClassAd* p = ad.parent(); p != nullptr; p = p->parent()) {
    for (const auto& attr : *p) {
      bool shadowed = false;
      for (const ClassAd* q = &ad; q != p && !shadowed; q = q->parent()) {
        shadowed = q->FindOwnKey(attr.name_id().key) != nullptr;
      }
      if (!shadowed) fn(attr.name(), attr.expr());
    }
  }
}

}  // namespace kite::classad
