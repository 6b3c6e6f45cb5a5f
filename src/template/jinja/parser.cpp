// Recursive descent over the tokens, following jinja2's grammar and operator precedence
// (jinja2/parser.py): conditional < or < and < not < comparison < + - < ~ < * / // % < ** <
// unary - + < postfix (. [] ()) and filters / tests.
#include <algorithm>

#include "template/jinja/ast.h"
#include "template/jinja/error.h"
#include "template/jinja/lexer.h"

namespace ember::jinja {
namespace {

using K = Token::Kind;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_all() {
    std::string stop;
    Body body = parse_body({}, &stop);
    return body;
  }

 private:
  // ---- statements ----

  // Parses until a block tag whose name is in `stops` (left positioned after that name) or the
  // end of input (only allowed when stops is empty).
  Body parse_body(const std::vector<std::string>& stops, std::string* stop) {
    Depth guard(*this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == K::End) {
        if (!stops.empty()) error(t, "unexpected end of template, expected '" + stops.front() + "'");
        return body;
      }
      if (t.kind == K::Text) {
        auto n = node(NodeKind::Text, t);
        n->literal = Value::string(t.value);
        body.push_back(std::move(n));
        ++pos_;
      } else if (t.kind == K::VarBegin) {
        ++pos_;
        auto n = node(NodeKind::Output, t);
        n->kids.push_back(expression());
        expect(K::VarEnd, "'}}'");
        body.push_back(std::move(n));
      } else {
        expect(K::BlockBegin, "a block");
        const Token& name = peek();
        if (name.kind != K::Name) error(name, "expected a statement name");
        if (std::find(stops.begin(), stops.end(), name.value) != stops.end()) {
          ++pos_;
          *stop = name.value;
          return body;
        }
        body.push_back(statement());
      }
    }
  }

  NodePtr statement() {
    const Token& t = next();
    const std::string& s = t.value;
    if (s == "if") return if_statement(t);
    if (s == "for") return for_statement(t);
    if (s == "set") return set_statement(t);
    if (s == "macro") return macro_statement(t);
    if (s == "call") return call_block(t);
    if (s == "filter") return filter_block(t);
    if (s == "break" || s == "continue") {
      auto n = node(s == "break" ? NodeKind::Break : NodeKind::Continue, t);
      end_block();
      return n;
    }
    if (s == "generation") {  // transformers' assistant-mask tag: renders its body unchanged
      end_block();
      auto n = node(NodeKind::If, t);
      auto yes = node(NodeKind::Literal, t);
      yes->literal = Value::boolean(true);
      n->kids.push_back(std::move(yes));
      std::string stop;
      n->bodies.push_back(parse_body({"endgeneration"}, &stop));
      end_block();
      return n;
    }
    error(t, "unknown or unsupported statement '" + s + "'");
  }

  NodePtr if_statement(const Token& t) {
    auto n = node(NodeKind::If, t);
    n->kids.push_back(expression());
    end_block();
    while (true) {
      std::string stop;
      Body body = parse_body({"elif", "else", "endif"}, &stop);
      if (stop == "elif") {
        n->bodies.push_back(std::move(body));
        n->kids.push_back(expression());
        end_block();
        continue;
      }
      n->bodies.push_back(std::move(body));
      end_block();
      if (stop == "else") {
        n->else_body = parse_body({"endif"}, &stop);
        end_block();
      }
      return n;
    }
  }

  NodePtr for_statement(const Token& t) {
    auto n = node(NodeKind::For, t);
    n->targets = target_names();
    expect_name("in");
    n->kids.push_back(expression(/*allow_cond=*/false));
    n->kids.push_back(nullptr);
    if (accept_name("if")) n->kids[1] = expression();
    if (accept_name("recursive")) error(t, "recursive loops are not supported");
    end_block();
    std::string stop;
    n->body = parse_body({"else", "endfor"}, &stop);
    end_block();
    if (stop == "else") {
      n->else_body = parse_body({"endfor"}, &stop);
      end_block();
    }
    return n;
  }

  NodePtr set_statement(const Token& t) {
    auto n = node(NodeKind::Set, t);
    const Token& first = peek();
    if (first.kind == K::Name && peek(1).kind == K::Op && peek(1).value == ".") {
      n->targets.push_back(next().value);
      ++pos_;
      n->attr = expect(K::Name, "an attribute name").value;
    } else {
      n->targets = target_names();
    }
    if (accept_op("=")) {
      n->kids.push_back(tuple_or_expression());
      end_block();
      return n;
    }
    if (n->targets.size() != 1) error(t, "a set block takes one name");
    end_block();
    std::string stop;
    n->body = parse_body({"endset"}, &stop);
    end_block();
    return n;
  }

  NodePtr macro_statement(const Token& t) {
    auto n = node(NodeKind::Macro, t);
    n->name = expect(K::Name, "a macro name").value;
    params(*n);
    end_block();
    std::string stop;
    n->body = parse_body({"endmacro"}, &stop);
    if (peek().kind == K::Name) ++pos_;  // {% endmacro name %}
    end_block();
    return n;
  }

  NodePtr call_block(const Token& t) {
    auto n = node(NodeKind::CallBlock, t);
    if (peek().kind == K::Op && peek().value == "(") params(*n);
    n->kids.push_back(expression());
    if (n->kids[0]->kind != NodeKind::Call) error(t, "{% call %} needs a macro call");
    end_block();
    std::string stop;
    n->body = parse_body({"endcall"}, &stop);
    end_block();
    return n;
  }

  NodePtr filter_block(const Token& t) {
    auto n = node(NodeKind::FilterBlock, t);
    n->kids.push_back(filter(nullptr));
    while (accept_op("|")) n->kids[0] = filter(std::move(n->kids[0]));
    end_block();
    std::string stop;
    n->body = parse_body({"endfilter"}, &stop);
    end_block();
    return n;
  }

  // (a, b=default, ...) for macros and call blocks: targets and their defaults in args.
  void params(Node& n) {
    expect_op("(");
    while (!accept_op(")")) {
      if (!n.targets.empty()) expect_op(",");
      if (accept_op(")")) break;
      n.targets.push_back(expect(K::Name, "a parameter name").value);
      n.args.push_back(accept_op("=") ? expression() : nullptr);
    }
  }

  std::vector<std::string> target_names() {
    std::vector<std::string> names;
    const bool paren = accept_op("(");
    do {
      names.push_back(expect(K::Name, "a variable name").value);
    } while (accept_op(","));
    if (paren) expect_op(")");
    return names;
  }

  void end_block() { expect(K::BlockEnd, "'%}'"); }

  // ---- expressions ----

  NodePtr tuple_or_expression() {
    NodePtr first = expression();
    if (!(peek().kind == K::Op && peek().value == ",")) return first;
    auto list = node(NodeKind::ListLit, peek());
    list->name = "tuple";
    list->kids.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().kind == K::BlockEnd || peek().kind == K::VarEnd) break;
      list->kids.push_back(expression());
    }
    return list;
  }

  NodePtr expression(bool allow_cond = true) {
    Depth guard(*this);
    NodePtr e = or_expr();
    while (allow_cond && peek().kind == K::Name && peek().value == "if") {
      auto n = node(NodeKind::Cond, next());
      n->kids.push_back(std::move(e));
      n->kids.push_back(or_expr());
      n->kids.push_back(accept_name("else") ? expression() : nullptr);
      e = std::move(n);
    }
    return e;
  }

  NodePtr binary(NodePtr l, const Token& op, NodePtr r) {
    auto n = node(NodeKind::Binary, op);
    n->name = op.value;
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  NodePtr or_expr() {
    NodePtr e = and_expr();
    while (peek().kind == K::Name && peek().value == "or") {
      const Token& op = next();
      e = binary(std::move(e), op, and_expr());
    }
    return e;
  }

  NodePtr and_expr() {
    NodePtr e = not_expr();
    while (peek().kind == K::Name && peek().value == "and") {
      const Token& op = next();
      e = binary(std::move(e), op, not_expr());
    }
    return e;
  }

  NodePtr not_expr() {
    if (peek().kind == K::Name && peek().value == "not") {
      Depth guard(*this);
      auto n = node(NodeKind::Unary, next());
      n->name = "not";
      n->kids.push_back(not_expr());
      return n;
    }
    return compare();
  }

  NodePtr compare() {
    NodePtr e = math1();
    while (true) {
      const Token& t = peek();
      std::string op;
      if (t.kind == K::Op && (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == ">" ||
                              t.value == "<=" || t.value == ">="))
        op = t.value;
      else if (t.kind == K::Name && t.value == "in")
        op = "in";
      else if (t.kind == K::Name && t.value == "not" && peek(1).kind == K::Name && peek(1).value == "in")
        op = "not in";
      else
        return e;
      pos_ += op == "not in" ? 2 : 1;
      Token as_op = t;
      as_op.value = op;
      e = binary(std::move(e), as_op, math1());
    }
  }

  NodePtr math1() {
    NodePtr e = concat();
    while (peek().kind == K::Op && (peek().value == "+" || peek().value == "-")) {
      const Token& op = next();
      e = binary(std::move(e), op, concat());
    }
    return e;
  }

  NodePtr concat() {
    NodePtr e = math2();
    while (peek().kind == K::Op && peek().value == "~") {
      const Token& op = next();
      e = binary(std::move(e), op, math2());
    }
    return e;
  }

  NodePtr math2() {
    NodePtr e = power();
    while (peek().kind == K::Op &&
           (peek().value == "*" || peek().value == "/" || peek().value == "//" || peek().value == "%")) {
      const Token& op = next();
      e = binary(std::move(e), op, power());
    }
    return e;
  }

  NodePtr power() {
    NodePtr e = unary(true);
    while (peek().kind == K::Op && peek().value == "**") {
      const Token& op = next();
      e = binary(std::move(e), op, unary(true));
    }
    return e;
  }

  NodePtr unary(bool with_filter) {
    Depth guard(*this);
    NodePtr e;
    if (peek().kind == K::Op && (peek().value == "-" || peek().value == "+")) {
      auto n = node(NodeKind::Unary, peek());
      n->name = next().value;
      n->kids.push_back(unary(false));
      e = std::move(n);
    } else {
      e = postfix(primary());
    }
    return with_filter ? filters_and_tests(std::move(e)) : std::move(e);
  }

  NodePtr primary() {
    const Token& t = next();
    if (t.kind == K::Name) {
      auto n = node(NodeKind::Literal, t);
      if (t.value == "true" || t.value == "True") n->literal = Value::boolean(true);
      else if (t.value == "false" || t.value == "False") n->literal = Value::boolean(false);
      else if (t.value == "none" || t.value == "None") n->literal = Value::none();
      else {
        n->kind = NodeKind::Name;
        n->name = t.value;
      }
      return n;
    }
    if (t.kind == K::String) {
      std::string s = t.value;
      while (peek().kind == K::String) s += next().value;  // adjacent literals join
      auto n = node(NodeKind::Literal, t);
      n->literal = Value::string(std::move(s));
      return n;
    }
    if (t.kind == K::Int || t.kind == K::Float) {
      auto n = node(NodeKind::Literal, t);
      try {
        n->literal = t.kind == K::Int ? Value::integer(std::stoll(t.value)) : Value::number(std::stod(t.value));
      } catch (const std::exception&) {
        error(t, "number out of range: " + t.value);
      }
      return n;
    }
    if (t.kind == K::Op && t.value == "(") return paren(t);
    if (t.kind == K::Op && t.value == "[") return list_literal(t);
    if (t.kind == K::Op && t.value == "{") return dict_literal(t);
    error(t, "unexpected " + describe(t));
  }

  NodePtr paren(const Token& t) {
    if (accept_op(")")) {  // () is an empty tuple
      auto empty = node(NodeKind::ListLit, t);
      empty->name = "tuple";
      return empty;
    }
    NodePtr e = expression();
    if (accept_op(")")) return e;
    auto list = node(NodeKind::ListLit, t);
    list->name = "tuple";
    list->kids.push_back(std::move(e));
    while (accept_op(",")) {
      if (accept_op(")")) return list;
      list->kids.push_back(expression());
    }
    expect_op(")");
    return list;
  }

  NodePtr list_literal(const Token& t) {
    auto n = node(NodeKind::ListLit, t);
    while (!accept_op("]")) {
      if (!n->kids.empty()) expect_op(",");
      if (accept_op("]")) break;
      n->kids.push_back(expression());
    }
    return n;
  }

  NodePtr dict_literal(const Token& t) {
    auto n = node(NodeKind::DictLit, t);
    while (!accept_op("}")) {
      if (!n->kids.empty()) expect_op(",");
      if (accept_op("}")) break;
      n->kids.push_back(expression());
      expect_op(":");
      n->kids.push_back(expression());
    }
    return n;
  }

  NodePtr postfix(NodePtr e) {
    while (peek().kind == K::Op) {
      const Token& t = peek();
      if (t.value == ".") {
        ++pos_;
        const Token& name = next();
        if (name.kind != K::Name && name.kind != K::Int) error(name, "expected an attribute name after '.'");
        auto n = node(NodeKind::Attr, name);
        n->name = name.value;
        n->kids.push_back(std::move(e));
        e = std::move(n);
      } else if (t.value == "[") {
        ++pos_;
        e = subscript(std::move(e), t);
      } else if (t.value == "(") {
        ++pos_;
        auto n = node(NodeKind::Call, t);
        n->kids.push_back(std::move(e));
        call_args(*n);
        e = std::move(n);
      } else {
        break;
      }
    }
    return e;
  }

  NodePtr subscript(NodePtr e, const Token& t) {
    NodePtr parts[3];
    int colons = 0;
    for (int i = 0; i < 3; ++i) {
      if (!(peek().kind == K::Op && (peek().value == ":" || peek().value == "]"))) parts[i] = expression();
      if (i < 2 && accept_op(":")) {
        ++colons;
        continue;
      }
      break;
    }
    expect_op("]");
    auto n = node(colons ? NodeKind::Slice : NodeKind::Item, t);
    n->kids.push_back(std::move(e));
    if (!colons) {
      if (!parts[0]) error(t, "empty subscript");
      n->kids.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) n->kids.push_back(std::move(p));
    }
    return n;
  }

  // After '(' : positional and keyword arguments up to ')'.
  void call_args(Node& n) {
    while (!accept_op(")")) {
      if (!n.args.empty()) expect_op(",");
      if (accept_op(")")) break;
      std::string kw;
      if (peek().kind == K::Name && peek(1).kind == K::Op && peek(1).value == "=") {
        kw = next().value;
        ++pos_;
      } else if (!n.arg_names.empty() && !n.arg_names.back().empty()) {
        error(peek(), "a positional argument follows a keyword argument");
      }
      n.args.push_back(expression());
      n.arg_names.push_back(kw);
    }
  }

  NodePtr filter(NodePtr input) {
    const Token& name = expect(K::Name, "a filter name");
    auto n = node(NodeKind::Filter, name);
    n->name = name.value;
    while (accept_op(".")) n->name += "." + expect(K::Name, "a filter name").value;
    n->kids.push_back(std::move(input));
    if (accept_op("(")) call_args(*n);
    return n;
  }

  NodePtr filters_and_tests(NodePtr e) {
    while (true) {
      if (accept_op("|")) {
        e = filter(std::move(e));
      } else if (peek().kind == K::Name && peek().value == "is") {
        e = test(std::move(e), next());
      } else if (peek().kind == K::Op && peek().value == "(") {
        e = postfix(std::move(e));
      } else {
        return e;
      }
    }
  }

  NodePtr test(NodePtr input, const Token& is) {
    auto n = node(NodeKind::Test, is);
    n->negated = accept_name("not");
    n->name = expect(K::Name, "a test name").value;
    n->kids.push_back(std::move(input));
    const Token& t = peek();
    if (t.kind == K::Op && t.value == "(") {
      ++pos_;
      call_args(*n);
    } else if (t.kind == K::String || t.kind == K::Int || t.kind == K::Float ||
               (t.kind == K::Op && (t.value == "[" || t.value == "{")) ||
               (t.kind == K::Name && t.value != "else" && t.value != "or" && t.value != "and" && t.value != "if" &&
                t.value != "is" && t.value != "in" && t.value != "not")) {
      n->args.push_back(postfix(primary()));
      n->arg_names.emplace_back();
    }
    return n;
  }

  // ---- tokens ----

  struct Depth {
    explicit Depth(Parser& p) : p(p) {
      if (++p.depth_ > kMaxNesting) p.error(p.peek(), "the template nests deeper than the limit");
    }
    ~Depth() { --p.depth_; }
    Parser& p;
  };

  const Token& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool accept_op(const char* op) {
    if (peek().kind == K::Op && peek().value == op) return ++pos_, true;
    return false;
  }
  bool accept_name(const char* name) {
    if (peek().kind == K::Name && peek().value == name) return ++pos_, true;
    return false;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) error(peek(), std::string("expected '") + op + "', got " + describe(peek()));
  }
  void expect_name(const char* name) {
    if (!accept_name(name)) error(peek(), std::string("expected '") + name + "', got " + describe(peek()));
  }
  const Token& expect(K kind, const std::string& what) {
    if (peek().kind != kind) error(peek(), "expected " + what + ", got " + describe(peek()));
    return next();
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case K::End: return "end of template";
      case K::VarEnd: return "'}}'";
      case K::BlockEnd: return "'%}'";
      case K::Text: return "text";
      default: return "'" + t.value + "'";
    }
  }
  static NodePtr node(NodeKind kind, const Token& t) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = t.line;
    n->col = t.col;
    return n;
  }
  [[noreturn]] void error(const Token& t, const std::string& what) const { fail("line {}:{}: {}", t.line, t.col, what); }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(lex(source)).parse_all(); }

}  // namespace ember::jinja
