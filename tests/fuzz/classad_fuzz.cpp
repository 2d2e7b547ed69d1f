// libFuzzer target for the ClassAd parsers: parses the input as an expression, an old-syntax
// ad, a new-syntax ad and a JSON ad; unparses what parsed, reparses it, and evaluates it (also
// through string(), which prints values as HTCondor does, and inside a nested record, which
// exercises lexical scoping). Seeds in tests/fuzz/corpus/classad/ call the built-ins.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "classad/classad.h"
#include "classad/expr.h"
#include "classad/io.h"
#include "classad/match.h"

namespace {

using namespace kite::classad;

void Check(bool ok) {
  if (!ok) std::abort();
}

void ExerciseExpr(const ExprPtr& e, const ClassAd& my, const ClassAd& target) {
  std::string text = Unparse(*e);
  auto again = ParseExpr(text);
  Check(again.has_value());         // canonical text always reparses
  Check(Unparse(**again) == text);  // ... to the same text
  Check(SameExpr(*e, **again));     // ... and the same tree
  (void)EvaluateExpr(*e, &my, &target).ToString();
  // Wrapped, the text may pass the parser's nesting limit; what parses is evaluated.
  for (const std::string& wrapped : {"string((" + text + "))", "[ v = (" + text + ") ].v"}) {
    if (auto w = ParseExpr(wrapped)) (void)EvaluateExpr(**w, &my, &target);
  }
  std::string json;
  AppendJsonValue(json, *e);
}

void ExerciseAd(const ClassAd& ad) {
  auto old_back = ParseOldAd(ToOldText(ad));
  Check(old_back.has_value());
  auto new_back = ParseNewAd(ToNewText(ad));
  Check(new_back.has_value());
  std::string json;
  AppendJson(json, ad);
  (void)ParseJsonAd(json);  // may differ for non-UTF-8 strings, but must not crash
  for (const auto& attr : ad) (void)ad.Evaluate(attr.name(), &ad);
  (void)Match(ad, ad);
  (void)Rank(ad, ad);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  static const ClassAd* my = [] {
    auto* ad = new ClassAd();
    ad->Assign("x", 5);
    ad->Assign("Name", "job");
    (void)ad->InsertText("lst", "{ 1, \"two\", 3.0 }");
    (void)ad->InsertText("rec", "[ a = 1; b = x ]");
    (void)ad->InsertText("nest", "[ inner = [ v = x; w = a ]; l = { [ a = 1 ], [ a = 2 ] } ]");
    (void)ad->InsertText("when", "absTime(\"2004-01-01T12:00:00+01:00\")");
    return ad;
  }();
  static const ClassAd* target = [] {
    auto* ad = new ClassAd();
    ad->Assign("y", 2.5);
    ad->Assign("Memory", 4096);
    return ad;
  }();
  if (auto e = ParseExpr(text)) ExerciseExpr(*e, *my, *target);
  if (auto ad = ParseOldAd(text)) ExerciseAd(*ad);
  if (auto ad = ParseNewAd(text)) ExerciseAd(*ad);
  if (auto ad = ParseJsonAd(text)) ExerciseAd(*ad);
  return 0;
}
