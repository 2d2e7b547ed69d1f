// Lexer and recursive-descent parser for ClassAd expressions and records.
#include "classad/parser.h"

#include <cctype>
#include <charconv>
#include <limits>

#include "common/strings.h"

namespace kite::classad {
namespace {

bool IsIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

struct Keyword {
  std::string_view text;
  Tok tok;
};
constexpr Keyword kKeywords[] = {
    {"true", Tok::kTrue},     {"false", Tok::kFalse}, {"undefined", Tok::kUndefined},
    {"error", Tok::kErrorKw}, {"is", Tok::kIs},       {"isnt", Tok::kIsnt},
};

// Binary operators by token: precedence (higher binds tighter) and node operator.
struct BinaryOp {
  int prec;
  Op op;
};
bool BinaryOpFor(Tok t, BinaryOp* out) {
  switch (t) {
    case Tok::kOrOr:
      *out = {2, Op::kOr};
      return true;
    case Tok::kAndAnd:
      *out = {3, Op::kAnd};
      return true;
    case Tok::kPipe:
      *out = {4, Op::kBitOr};
      return true;
    case Tok::kCaret:
      *out = {5, Op::kBitXor};
      return true;
    case Tok::kAmp:
      *out = {6, Op::kBitAnd};
      return true;
    case Tok::kEqEq:
      *out = {7, Op::kEq};
      return true;
    case Tok::kNotEq:
      *out = {7, Op::kNe};
      return true;
    case Tok::kMetaEq:
    case Tok::kIs:
      *out = {7, Op::kIs};
      return true;
    case Tok::kMetaNe:
    case Tok::kIsnt:
      *out = {7, Op::kIsnt};
      return true;
    case Tok::kLt:
      *out = {8, Op::kLt};
      return true;
    case Tok::kLe:
      *out = {8, Op::kLe};
      return true;
    case Tok::kGt:
      *out = {8, Op::kGt};
      return true;
    case Tok::kGe:
      *out = {8, Op::kGe};
      return true;
    case Tok::kShl:
      *out = {9, Op::kShl};
      return true;
    case Tok::kShr:
      *out = {9, Op::kShr};
      return true;
    case Tok::kUShr:
      *out = {9, Op::kUShr};
      return true;
    case Tok::kPlus:
      *out = {10, Op::kAdd};
      return true;
    case Tok::kMinus:
      *out = {10, Op::kSub};
      return true;
    case Tok::kStar:
      *out = {11, Op::kMul};
      return true;
    case Tok::kSlash:
      *out = {11, Op::kDiv};
      return true;
    case Tok::kPercent:
      *out = {11, Op::kMod};
      return true;
    default:
      return false;
  }
}

// Counts nesting for the life of one recursive call, so hostile input cannot exhaust the stack.
class NestGuard {
 public:
  explicit NestGuard(int& n) : n_(n) { ++n_; }
  ~NestGuard() { --n_; }
  bool too_deep() const { return n_ > kMaxExprDepth; }

 private:
  int& n_;
};

}  // namespace

Parser::Parser(std::string_view text, ParseOptions options) : text_(text), options_(options) {
  Advance();
}

std::string Parser::Where(size_t pos) const {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::string col = std::to_string(pos - line_start + 1);
  return line == 1 ? "column " + col : "line " + std::to_string(line) + " column " + col;
}

void Parser::SetError(std::string what, size_t pos) {
  if (failed_) return;
  failed_ = true;
  error_ = kite::Error(kite::ErrorCode::kInvalidInput, what + " at " + Where(pos));
  tok_.kind = Tok::kEnd;
}

// Returns false (with an error set) on an unterminated comment.
bool Parser::SkipBlanksAndComments() {
  for (;;) {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (text_.substr(pos_, 2) == "//") {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else if (text_.substr(pos_, 2) == "/*") {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) {
        SetError("unterminated comment", pos_);
        return false;
      }
      pos_ = end + 2;
    } else {
      return true;
    }
  }
}

void Parser::Advance() {
  if (failed_) return;
  if (!SkipBlanksAndComments()) return;
  tok_.pos = pos_;
  if (pos_ >= text_.size()) {
    tok_.kind = Tok::kEnd;
    return;
  }
  char c = text_[pos_];
  if (IsIdentStart(c)) {
    size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    tok_.text = text_.substr(start, pos_ - start);
    tok_.kind = Tok::kIdent;
    tok_.quoted = false;
    for (const auto& k : kKeywords) {
      if (kite::EqualsIgnoreCase(k.text, tok_.text)) tok_.kind = k.tok;
    }
    return;
  }
  if (IsDigit(c) || (c == '.' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1]))) {
    LexNumber();
    return;
  }
  if (c == '"' || c == '\'') {
    if (!LexString(c)) return;
    // Literals with the same quote separated only by blanks join into one, as in HTCondor:
    // "a" "b" is "ab".
    for (;;) {
      size_t next = pos_;
      while (next < text_.size() && std::isspace(static_cast<unsigned char>(text_[next]))) ++next;
      if (next >= text_.size() || text_[next] != c) break;
      pos_ = next;
      if (!LexString(c, true)) return;
    }
    tok_.kind = c == '"' ? Tok::kString : Tok::kIdent;
    tok_.quoted = c == '\'';
    if (tok_.quoted) tok_.text = tok_.str;
    return;
  }
  LexOperator();
}

bool Parser::LexNumber() {
  size_t start = pos_;
  while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  bool real = false;
  if (pos_ + 1 < text_.size() && text_[pos_] == '.' && IsDigit(text_[pos_ + 1])) {
    real = true;
    ++pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    size_t e = pos_ + 1;
    if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
    if (e < text_.size() && IsDigit(text_[e])) {
      real = true;
      pos_ = e;
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
  }
  if (pos_ < text_.size() && IsIdentChar(text_[pos_])) {
    SetError("malformed number", start);
    return false;
  }
  if (!real && pos_ - start > 1 && text_[start] == '0') {
    // HTCondor's old-ClassAd lexer (the one its daemons use) refuses octal-looking integers.
    SetError("integer literal with a leading zero", start);
    return false;
  }
  const char* b = text_.data() + start;
  const char* e = text_.data() + pos_;
  if (real) {
    auto r = std::from_chars(b, e, tok_.real);
    if (r.ec != std::errc()) {
      SetError("real literal out of range", start);
      return false;
    }
    tok_.kind = Tok::kReal;
  } else {
    auto r = std::from_chars(b, e, tok_.integer);
    if (r.ec != std::errc()) {
      SetError("integer literal out of range", start);
      return false;
    }
    tok_.kind = Tok::kInt;
  }
  return true;
}

// Decodes a "string" or a 'quoted name' into tok_.str (appending to it when `append`).
bool Parser::LexString(char quote, bool append) {
  size_t start = pos_++;
  if (!append) tok_.str.clear();
  while (pos_ < text_.size() && text_[pos_] != quote) {
    char c = text_[pos_++];
    if (c != '\\' || pos_ >= text_.size()) {
      tok_.str.push_back(c);
      continue;
    }
    if (!LexEscape()) return false;
  }
  if (pos_ >= text_.size()) {
    SetError(quote == '"' ? "unterminated string" : "unterminated quoted name", start);
    return false;
  }
  ++pos_;  // closing quote
  return true;
}

// Decodes the escape whose backslash was just consumed. HTCondor's escapes: \a \b \f \n \r \t
// \v \\ \? \' \" and octal (\0 to \377, up to three digits); before any other character the
// backslash is dropped ("a\.b" is "a.b"), or kept in lenient (old-syntax) mode.
bool Parser::LexEscape() {
  static constexpr std::string_view kFrom = "abfnrtv\\?'\"/";
  static constexpr std::string_view kTo = "\a\b\f\n\r\t\v\\?'\"/";
  char e = text_[pos_++];
  if (size_t k = kFrom.find(e); k != std::string_view::npos) {
    tok_.str.push_back(kTo[k]);
    return true;
  }
  if (e >= '0' && e <= '7') {
    int v = e - '0';
    int max_digits = e <= '3' ? 3 : 2;
    for (int k = 1;
         k < max_digits && pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '7'; ++k) {
      v = v * 8 + (text_[pos_++] - '0');
    }
    if (v == 0) {
      SetError("NUL character in string", pos_ - 2);
      return false;
    }
    tok_.str.push_back(static_cast<char>(v));
    return true;
  }
  if (options_.lenient_escapes) tok_.str.push_back('\\');
  tok_.str.push_back(e);
  return true;
}

void Parser::LexOperator() {
  struct OpTok {
    std::string_view text;
    Tok tok;
  };
  // Longest first, so "=?=" wins over "=" and ">>>" over ">>".
  static constexpr OpTok kOps[] = {
      {">>>", Tok::kUShr},  {"=?=", Tok::kMetaEq}, {"=!=", Tok::kMetaNe}, {"||", Tok::kOrOr},
      {"&&", Tok::kAndAnd}, {"==", Tok::kEqEq},    {"!=", Tok::kNotEq},   {"<=", Tok::kLe},
      {">=", Tok::kGe},     {"<<", Tok::kShl},     {">>", Tok::kShr},     {"(", Tok::kLParen},
      {")", Tok::kRParen},  {"[", Tok::kLBracket}, {"]", Tok::kRBracket}, {"{", Tok::kLBrace},
      {"}", Tok::kRBrace},  {",", Tok::kComma},    {";", Tok::kSemi},     {".", Tok::kDot},
      {"=", Tok::kAssign},  {"?:", Tok::kElvis},   {"?", Tok::kQuestion}, {":", Tok::kColon},
      {"!", Tok::kBang},    {"~", Tok::kTilde},    {"<", Tok::kLt},       {">", Tok::kGt},
      {"+", Tok::kPlus},    {"-", Tok::kMinus},    {"*", Tok::kStar},     {"/", Tok::kSlash},
      {"%", Tok::kPercent}, {"&", Tok::kAmp},      {"|", Tok::kPipe},     {"^", Tok::kCaret},
  };
  std::string_view rest = text_.substr(pos_);
  for (const auto& o : kOps) {
    if (rest.starts_with(o.text)) {
      tok_.kind = o.tok;
      pos_ += o.text.size();
      return;
    }
  }
  unsigned char c = static_cast<unsigned char>(text_[pos_]);
  std::string shown =
      std::isprint(c) ? std::string(1, static_cast<char>(c)) : "\\x" + std::to_string(c);
  SetError("unexpected character '" + shown + "'", pos_);
}

bool Parser::Accept(Tok kind) {
  if (failed_ || tok_.kind != kind) return false;
  Advance();
  return true;
}

void Parser::Expect(Tok kind, std::string_view what) {
  if (failed_) return;
  if (tok_.kind != kind) {
    SetError(std::string("expected ") + std::string(what), tok_.pos);
    return;
  }
  Advance();
}

ExprPtr Parser::Checked(ExprPtr e) {
  if (e && e->depth() > kMaxExprDepth) {
    SetError("expression nested more than " + std::to_string(kMaxExprDepth) + " levels", tok_.pos);
    return nullptr;
  }
  return e;
}

ExprPtr Parser::ParseExpr() {
  return ParseTernary();
}

ExprPtr Parser::ParseTernary() {
  NestGuard guard(nesting_);
  if (guard.too_deep()) {
    SetError("expression nested more than " + std::to_string(kMaxExprDepth) + " levels", tok_.pos);
    return nullptr;
  }
  ExprPtr cond = ParseBinary(2);
  if (failed_ || tok_.kind != Tok::kQuestion) return cond;
  Advance();
  if (Accept(Tok::kColon)) {
    ExprPtr rhs = ParseTernary();
    if (failed_) return nullptr;
    return Checked(std::make_shared<BinaryExpr>(Op::kElvis, std::move(cond), std::move(rhs)));
  }
  ExprPtr then_expr = ParseExpr();
  Expect(Tok::kColon, "':' in conditional expression");
  ExprPtr else_expr = failed_ ? nullptr : ParseTernary();
  if (failed_) return nullptr;
  return Checked(
      std::make_shared<TernaryExpr>(std::move(cond), std::move(then_expr), std::move(else_expr)));
}

// Precedence climbing over the left-associative binary operators.
ExprPtr Parser::ParseBinary(int min_prec) {
  ExprPtr lhs = ParseUnary();
  BinaryOp bop;
  while (!failed_ && BinaryOpFor(tok_.kind, &bop) && bop.prec >= min_prec) {
    Advance();
    ExprPtr rhs = ParseBinary(bop.prec + 1);
    if (failed_) return nullptr;
    lhs = Checked(std::make_shared<BinaryExpr>(bop.op, std::move(lhs), std::move(rhs)));
  }
  return failed_ ? nullptr : lhs;
}

bool Parser::PostfixFollowsNumber() const {
  // Looks past the number token without consuming it: the lexer state is copied, not advanced.
  Parser ahead = *this;
  ahead.Advance();
  return ahead.tok_.kind == Tok::kDot || ahead.tok_.kind == Tok::kLBracket;
}

ExprPtr Parser::ParseUnary() {
  Op op;
  switch (tok_.kind) {
    case Tok::kMinus:
      op = Op::kNeg;
      break;
    case Tok::kPlus:
      op = Op::kPlus;
      break;
    case Tok::kBang:
      op = Op::kNot;
      break;
    case Tok::kTilde:
      op = Op::kBitNot;
      break;
    default:
      return ParsePostfix(ParsePrimary());
  }
  Advance();
  if (op == Op::kNeg && (tok_.kind == Tok::kInt || tok_.kind == Tok::kReal) &&
      !PostfixFollowsNumber()) {
    // A negative number is one literal, so "-5" unparses and reparses as itself. Not when a
    // postfix operator follows: "-0.V" is -(0.V), since selection binds tighter than minus.
    ExprPtr lit = TakeNegatedNumber();
    return lit ? ParsePostfix(std::move(lit)) : nullptr;
  }
  NestGuard guard(nesting_);
  if (guard.too_deep()) {
    SetError("expression nested more than " + std::to_string(kMaxExprDepth) + " levels", tok_.pos);
    return nullptr;
  }
  ExprPtr operand = ParseUnary();
  if (failed_) return nullptr;
  return Checked(std::make_shared<UnaryExpr>(op, std::move(operand)));
}

ExprPtr Parser::ParsePostfix(ExprPtr base) {
  while (!failed_ && base) {
    if (Accept(Tok::kDot)) {
      NameId name;
      if (!ParseName(&name)) return nullptr;
      base = Checked(std::make_shared<SelectExpr>(std::move(base), name));
    } else if (Accept(Tok::kLBracket)) {
      ExprPtr index = ParseExpr();
      Expect(Tok::kRBracket, "']' after subscript");
      if (failed_) return nullptr;
      base =
          Checked(std::make_shared<BinaryExpr>(Op::kSubscript, std::move(base), std::move(index)));
    } else if (Accept(Tok::kElvis)) {
      ExprPtr rhs = ParseElvisOperand();
      if (failed_) return nullptr;
      base = Checked(std::make_shared<BinaryExpr>(Op::kElvis, std::move(base), std::move(rhs)));
    } else {
      break;
    }
  }
  return failed_ ? nullptr : base;
}

ExprPtr Parser::TakeNegatedNumber() {
  ExprPtr lit;
  if (tok_.kind == Tok::kReal) {
    lit = MakeReal(-tok_.real);
  } else if (tok_.integer <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) {
    lit = MakeInteger(static_cast<int64_t>(0 - tok_.integer));
  } else {
    SetError("integer literal out of range", tok_.pos);
    return nullptr;
  }
  Advance();
  return lit;
}

// The right side of x ?: y: a postfix expression, or a negative number (HTCondor's lexer reads
// "-1" as one token there; any other unary operator is refused, as HTCondor does).
ExprPtr Parser::ParseElvisOperand() {
  NestGuard guard(nesting_);
  if (guard.too_deep()) {
    SetError("expression nested more than " + std::to_string(kMaxExprDepth) + " levels", tok_.pos);
    return nullptr;
  }
  if (tok_.kind == Tok::kMinus) {
    Parser ahead = *this;
    ahead.Advance();
    if (ahead.tok_.kind == Tok::kInt || ahead.tok_.kind == Tok::kReal) {
      Advance();
      ExprPtr lit = TakeNegatedNumber();
      return lit ? ParsePostfix(std::move(lit)) : nullptr;
    }
  }
  return ParsePostfix(ParsePrimary());
}

bool Parser::ParseName(NameId* name) {
  if (failed_) return false;
  if (tok_.kind != Tok::kIdent) {
    // Keywords are names too after a dot or before '=' only when quoted.
    SetError("expected an attribute name", tok_.pos);
    return false;
  }
  *name = InternName(tok_.text);
  Advance();
  return true;
}

ExprPtr Parser::ParsePrimary() {
  if (failed_) return nullptr;
  switch (tok_.kind) {
    case Tok::kInt: {
      if (tok_.integer > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        SetError("integer literal out of range", tok_.pos);
        return nullptr;
      }
      auto e = MakeInteger(static_cast<int64_t>(tok_.integer));
      Advance();
      return e;
    }
    case Tok::kReal: {
      auto e = MakeReal(tok_.real);
      Advance();
      return e;
    }
    case Tok::kString: {
      auto e = MakeString(tok_.str);
      Advance();
      return e;
    }
    case Tok::kTrue:
      Advance();
      return MakeBool(true);
    case Tok::kFalse:
      Advance();
      return MakeBool(false);
    case Tok::kUndefined:
      Advance();
      return MakeUndefined();
    case Tok::kErrorKw:
      Advance();
      return MakeError();
    case Tok::kIdent:
      return ParseNameOrCall();
    case Tok::kLParen: {
      Advance();
      ExprPtr inner = ParseExpr();
      Expect(Tok::kRParen, "')'");
      if (failed_) return nullptr;
      // Literals may be shared singletons, so mark a private copy.
      std::shared_ptr<Expr> marked;
      Value v;
      if (IsLiteral(*inner, &v)) {
        marked = std::make_shared<LiteralExpr>(v);
      } else {
        marked = std::const_pointer_cast<Expr>(inner);
      }
      internal::NodeAccess::MarkParenthesized(*marked);
      return marked;
    }
    case Tok::kLBrace:
      return ParseList();
    case Tok::kLBracket:
      return ParseRecord();
    case Tok::kEnd:
      SetError("unexpected end of expression", tok_.pos);
      return nullptr;
    default:
      SetError("expected an expression", tok_.pos);
      return nullptr;
  }
}

ExprPtr Parser::ParseNameOrCall() {
  // A quoted name's text lives in the token and is overwritten by later string tokens.
  std::string quoted_copy;
  std::string_view ident = tok_.text;
  if (tok_.quoted) ident = quoted_copy = tok_.str;
  bool quoted = tok_.quoted;
  Advance();
  if (tok_.kind == Tok::kLParen && quoted) {
    // Function names are plain identifiers; 'x'(...) would unparse to text that does not parse.
    SetError("a quoted name cannot be called as a function", tok_.pos);
    return nullptr;
  }
  if (tok_.kind == Tok::kLParen) {
    Advance();
    std::vector<ExprPtr> args;
    int depth = 1;
    if (tok_.kind != Tok::kRParen) {
      do {
        ExprPtr a = ParseExpr();
        if (failed_) return nullptr;
        depth = std::max(depth, a->depth() + 1);
        args.push_back(std::move(a));
      } while (Accept(Tok::kComma));
    }
    Expect(Tok::kRParen, "')' after function arguments");
    if (failed_) return nullptr;
    return Checked(
        std::make_shared<CallExpr>(std::string(ident), FindBuiltin(ident), std::move(args), depth));
  }
  bool my = kite::EqualsIgnoreCase(ident, "my");
  bool target = kite::EqualsIgnoreCase(ident, "target");
  if ((my || target) && !quoted && tok_.kind == Tok::kDot) {
    Advance();
    NameId name;
    if (!ParseName(&name)) return nullptr;
    return std::make_shared<AttrRefExpr>(my ? Scope::kMy : Scope::kTarget, name);
  }
  return std::make_shared<AttrRefExpr>(Scope::kNone, InternName(ident));
}

ExprPtr Parser::ParseList() {
  Advance();  // '{'
  std::vector<ExprPtr> items;
  int depth = 1;
  if (tok_.kind != Tok::kRBrace) {
    do {
      if (tok_.kind == Tok::kRBrace) break;  // trailing comma
      ExprPtr item = ParseExpr();
      if (failed_) return nullptr;
      depth = std::max(depth, item->depth() + 1);
      items.push_back(std::move(item));
    } while (Accept(Tok::kComma));
  }
  Expect(Tok::kRBrace, "'}' or ',' in list");
  if (failed_) return nullptr;
  return Checked(std::make_shared<ListExpr>(std::move(items), depth));
}

// Parses "name = expr; ..." up to and including ']'.
bool Parser::ParseRecordBody(ClassAd* ad, int* depth) {
  *depth = 1;
  while (!failed_ && tok_.kind != Tok::kRBracket) {
    if (Accept(Tok::kSemi)) continue;  // empty statements, as HTCondor allows: [ ;; a = 3;; ]
    NameId name;
    if (!ParseName(&name)) return false;
    Expect(Tok::kAssign, "'=' after attribute name");
    ExprPtr value = failed_ ? nullptr : ParseExpr();
    if (failed_) return false;
    *depth = std::max(*depth, value->depth() + 1);
    ad->Insert(name, std::move(value));
    if (!Accept(Tok::kSemi) && tok_.kind != Tok::kRBracket) {
      SetError("expected ';' or ']' in record", tok_.pos);
      return false;
    }
  }
  Expect(Tok::kRBracket, "']' to end the record");
  return !failed_;
}

ExprPtr Parser::ParseRecord() {
  NestGuard guard(nesting_);
  if (guard.too_deep()) {
    SetError("expression nested more than " + std::to_string(kMaxExprDepth) + " levels", tok_.pos);
    return nullptr;
  }
  Advance();  // '['
  auto ad = std::make_shared<ClassAd>();
  int depth = 1;
  if (!ParseRecordBody(ad.get(), &depth)) return nullptr;
  return Checked(std::make_shared<RecordExpr>(std::move(ad), depth));
}

kite::Result<ExprPtr> Parser::ParseWholeExpr() {
  if (!failed_ && tok_.kind == Tok::kEnd) SetError("empty expression", tok_.pos);
  ExprPtr e = ParseExpr();
  if (!failed_ && tok_.kind != Tok::kEnd) SetError("unexpected text after expression", tok_.pos);
  if (failed_) return kite::Fail(error_);
  return e;
}

kite::Result<ClassAd> Parser::ParseWholeRecord() {
  ClassAd ad;
  int depth = 0;
  if (!failed_ && tok_.kind != Tok::kLBracket)
    SetError("expected '[' to start a ClassAd", tok_.pos);
  if (!failed_) {
    Advance();
    ParseRecordBody(&ad, &depth);
  }
  if (!failed_ && tok_.kind != Tok::kEnd) SetError("unexpected text after ClassAd", tok_.pos);
  if (failed_) return kite::Fail(error_);
  return ad;
}

kite::Status Parser::ParseAssignment(ClassAd* ad) {
  NameId name;
  if (ParseName(&name)) {
    Expect(Tok::kAssign, "'=' after attribute name");
    ExprPtr value = failed_ ? nullptr : ParseExpr();
    if (!failed_ && tok_.kind != Tok::kEnd) SetError("unexpected text after expression", tok_.pos);
    if (!failed_) ad->Insert(name, std::move(value));
  }
  if (failed_) return kite::Fail(error_);
  return {};
}

kite::Result<ExprPtr> ParseExpr(std::string_view text) {
  return Parser(text).ParseWholeExpr();
}

kite::Status CheckAttributeName(std::string_view name) {
  auto bad = [&](const std::string& why) {
    std::string shown(name.substr(0, 64));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    return kite::Fail(kite::ErrorCode::kInvalidInput,
                      "attribute name '" + shown + (name.size() > 64 ? "..." : "") + "' " + why);
  };
  if (name.empty()) return kite::Fail(kite::ErrorCode::kInvalidInput, "empty attribute name");
  if (name.size() > kMaxAttributeName)
    return bad("is longer than " + std::to_string(kMaxAttributeName) + " characters");
  if (!IsIdentStart(name[0])) return bad("must start with a letter or '_'");
  for (char c : name) {
    if (!IsIdentChar(c)) return bad("may hold only letters, digits and '_'");
  }
  for (const auto& k : kKeywords) {
    if (kite::EqualsIgnoreCase(k.text, name))
      return bad("is a reserved word of the ClassAd language");
  }
  return {};
}

void AppendName(std::string& out, std::string_view name) {
  bool plain = !name.empty() && IsIdentStart(name[0]);
  for (char c : name) plain = plain && IsIdentChar(c);
  for (const auto& k : kKeywords) plain = plain && !kite::EqualsIgnoreCase(k.text, name);
  if (plain) {
    out += name;
    return;
  }
  out.push_back('\'');
  for (char c : name) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  out.push_back('\'');
}

}  // namespace kite::classad
