// Helpers for the ClassAd unit tests.
#include "test_util.h"

#include <gtest/gtest.h>

#include "classad/io.h"

namespace kite::classad::testing {

std::string EvalText(std::string_view text, const ClassAd* my, const ClassAd* target) {
  auto e = ParseExpr(text);
  if (!e) return "parse error: " + e.error().message();
  return EvaluateExpr(**e, my, target).ToString();
}

std::string Canonical(std::string_view text) {
  auto e = ParseExpr(text);
  if (!e) return "parse error: " + e.error().message();
  return Unparse(**e);
}

ClassAd Ad(std::string_view old_syntax) {
  auto ad = ParseOldAd(old_syntax);
  EXPECT_TRUE(ad.has_value()) << (ad ? "" : ad.error().message());
  return ad ? std::move(*ad) : ClassAd();
}

}  // namespace kite::classad::testing
