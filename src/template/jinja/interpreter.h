// Evaluates a parsed template: statements write to an output Text, expressions compute Values
// with Python's meaning. Scopes follow jinja2: a for loop and a macro call open one; `if` and
// `set` at the top level do not (hence namespace() in templates that count across a loop).
#pragma once
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "template/jinja/ast.h"
#include "template/jinja/value.h"

namespace ember::jinja {

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The positional argument at `index`, else the keyword `name`; nullptr when neither was given.
  const Value* get(size_t index, std::string_view name) const;
  Value get_or(size_t index, std::string_view name, Value fallback) const;
};

class Interpreter {
 public:
  // `variables`: what the template sees as globals (messages, tools, bos_token ...), besides
  // the builtins (range, namespace, raise_exception, strftime_now, dict).
  Interpreter(const Dict& variables, std::optional<std::time_t> now);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // namespace() objects are the only values a template can change, so the only way to make a
  // reference cycle (`{% set ns.me = ns %}`); the interpreter empties them when it ends.
  void own_namespace(const Value& ns) { namespaces_.push_back(ns); }

  Text render(const Body& body);

  Value call(const Value& fn, CallArgs& args);
  // Counts one unit of work against kMaxSteps.
  void tick();
  std::time_t now() const;
  int line() const { return line_; }
  int col() const { return col_; }

 private:
  enum class Flow { Normal, Break, Continue };
  using Scope = std::unordered_map<std::string, Value>;

  Flow exec(const Body& body);
  Flow exec(const Node& n);
  Flow exec_for(const Node& n);
  void exec_set(const Node& n);
  void define_macro(const Node& n);
  Text capture(const Body& body);
  Value invoke_macro(const Node& m, CallArgs& args, const Value& caller);
  void assign(const std::vector<std::string>& targets, const Value& v);
  void write(const Text& t);

  Value eval(const Node& n);
  Value eval_call(const Node& n);
  Value call_node(const Node& call, CallArgs& args);  // call's callee, arguments evaluated
  Value eval_binary(const Node& n);
  CallArgs eval_args(const Node& n);
  Value lookup(const std::string& name) const;

  std::vector<std::shared_ptr<Scope>> scopes_;
  Text* out_ = nullptr;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
  int col_ = 0;
  std::optional<std::time_t> now_;
  std::vector<Value> namespaces_;
};

// The builtins the template can call (globals.cpp), filters (filters.cpp), tests (tests.cpp)
// and the methods of str, dict and list (methods.cpp).
void add_globals(Dict& globals);
Value apply_filter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
bool apply_test(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
// Calls obj.name(args) when obj's type has that method; false when it has none.
bool call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args, Value* result);

// Python's operators and lookups (operators.cpp).
Value binary_op(std::string_view op, const Value& a, const Value& b);
Value get_attr(const Value& obj, std::string_view name);
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// What a for loop or a filter iterates: list items, dict keys, string code points; Undefined
// gives nothing; anything else throws.
Array iterate(const Value& v);
int64_t length(const Value& v);

}  // namespace ember::jinja
