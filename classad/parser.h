// The ClassAd lexer and recursive-descent parser (library-internal; callers use expr.h, io.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "classad/classad.h"
#include "classad/expr.h"
#include "classad/nodes.h"
#include "common/error.h"

namespace kite::classad {

enum class Tok : uint8_t {
  kEnd,
  kIdent,
  kInt,
  kReal,
  kString,
  kTrue,
  kFalse,
  kUndefined,
  kErrorKw,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kSemi,
  kDot,
  kAssign,
  kQuestion,
  kElvis,  // "?:" written as one token
  kColon,
  kOrOr,
  kAndAnd,
  kBang,
  kTilde,
  kEqEq,
  kNotEq,
  kMetaEq,
  kMetaNe,
  kIs,
  kIsnt,
  kLt,
  kLe,
  kGt,
  kGe,
  kShl,
  kShr,
  kUShr,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kAmp,
  kPipe,
  kCaret,
};

struct ParseOptions {
  // Old-syntax ads (condor_q -l): a backslash before anything but a known escape is kept as a
  // literal backslash instead of being an error, as HTCondor writes Windows paths and regexps.
  bool lenient_escapes = false;
};

class Parser {
 public:
  Parser(std::string_view text, ParseOptions options = {});

  // An expression followed by the end of the text.
  kite::Result<ExprPtr> ParseWholeExpr();
  // A record "[ a = 1; b = 2 ]" followed by the end of the text.
  kite::Result<ClassAd> ParseWholeRecord();
  // "name = expr" followed by the end of the text (one line of an old-syntax ad).
  kite::Status ParseAssignment(ClassAd* ad);

 private:
  struct Token {
    Tok kind = Tok::kEnd;
    size_t pos = 0;
    std::string_view text;  // identifier text (into the input, or into `str` when quoted)
    bool quoted = false;    // a 'quoted name'
    std::string str;        // decoded string literal or quoted name
    uint64_t integer = 0;
    double real = 0;
  };

  // Lexer.
  void Advance();
  bool SkipBlanksAndComments();
  bool LexNumber();
  // Decodes a quoted literal into tok_.str (appending when `append`).
  bool LexString(char quote, bool append = false);
  bool LexEscape();
  void LexOperator();
  std::string Where(size_t pos) const;
  void SetError(std::string what, size_t pos);
  // True when the token after the current (number) token is '.' or '['.
  bool PostfixFollowsNumber() const;
  void Expect(Tok kind, std::string_view what);
  bool Accept(Tok kind);

  // Grammar.
  ExprPtr ParseExpr();
  ExprPtr ParseTernary();
  ExprPtr ParseBinary(int min_prec);
  ExprPtr ParseUnary();
  ExprPtr ParsePostfix(ExprPtr base);
  ExprPtr ParseElvisOperand();
  // The negation of the current number token, which it consumes; nullptr (error set) when the
  // magnitude does not fit.
  ExprPtr TakeNegatedNumber();
  ExprPtr ParsePrimary();
  ExprPtr ParseNameOrCall();
  ExprPtr ParseList();
  ExprPtr ParseRecord();
  bool ParseRecordBody(ClassAd* ad, int* depth);
  bool ParseName(NameId* name);
  ExprPtr Checked(ExprPtr e);

  std::string_view text_;
  ParseOptions options_;
  size_t pos_ = 0;
  Token tok_;
  int nesting_ = 0;
  bool failed_ = false;
  kite::Error error_;
};

// Canonical text of a name: bare when it is an identifier and not a keyword, else 'quoted'.
void AppendName(std::string& out, std::string_view name);

// Whether `name` is an attribute name a job may be given: an identifier ([A-Za-z_][A-Za-z0-9_]*,
// at most kMaxAttributeName characters) that is not a keyword of the language (true, false,
// undefined, error, is, isnt). Fails with the reason, naming the attribute.
inline constexpr size_t kMaxAttributeName = 256;
kite::Status CheckAttributeName(std::string_view name);

}  // namespace kite::classad
