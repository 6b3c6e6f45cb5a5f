// jinja2's builtin tests (`x is defined`, `x is string` ...), with jinja2's answers for
// Undefined: it is iterable and a sequence (it iterates as empty), and nothing else.
#include <unordered_map>

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {
namespace {

using Kind = Value::Kind;
using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& arg(const CallArgs& a, const char* test) {
  const Value* v = a.get(0, "other");
  if (!v) v = a.get(0, "value");
  if (!v) fail("test '{}' needs an argument", test);
  return *v;
}

bool t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(const Value& v, const CallArgs&) { return v.kind() == Kind::Bool; }
bool t_true(const Value& v, const CallArgs&) { return v.kind() == Kind::Bool && v.as_bool(); }
bool t_false(const Value& v, const CallArgs&) { return v.kind() == Kind::Bool && !v.as_bool(); }
bool t_integer(const Value& v, const CallArgs&) { return v.kind() == Kind::Int; }
bool t_float(const Value& v, const CallArgs&) { return v.kind() == Kind::Float; }
bool t_number(const Value& v, const CallArgs&) { return v.is_number(); }
bool t_string(const Value& v, const CallArgs&) { return v.is_string(); }
bool t_mapping(const Value& v, const CallArgs&) { return v.kind() == Kind::Dict; }
bool t_iterable(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.kind() == Kind::Dict || v.is_undefined(); }
bool t_callable(const Value& v, const CallArgs&) { return v.is_callable(); }
bool t_sameas(const Value& v, const CallArgs& a) { return v.same_object(arg(a, "sameas")); }
bool t_eq(const Value& v, const CallArgs& a) { return equal(v, arg(a, "eq")); }
bool t_ne(const Value& v, const CallArgs& a) { return !equal(v, arg(a, "ne")); }
bool t_lt(const Value& v, const CallArgs& a) { return less(v, arg(a, "lt")); }
bool t_le(const Value& v, const CallArgs& a) { return !less(arg(a, "le"), v); }
bool t_gt(const Value& v, const CallArgs& a) { return less(arg(a, "gt"), v); }
bool t_ge(const Value& v, const CallArgs& a) { return !less(v, arg(a, "ge")); }
bool t_in(const Value& v, const CallArgs& a) {
  const Value* seq = a.get(0, "seq");
  if (!seq) fail("test 'in' needs an argument");
  return binary_op("in", v, *seq).truthy();
}
bool t_odd(const Value& v, const CallArgs&) { return v.is_number() && (v.as_int() % 2 != 0); }
bool t_even(const Value& v, const CallArgs&) { return v.is_number() && (v.as_int() % 2 == 0); }
bool t_divisibleby(const Value& v, const CallArgs& a) {
  const int64_t n = a.get_or(0, "num", Value::integer(1)).as_int();
  if (n == 0) fail("integer division or modulo by zero");
  return v.as_int() % n == 0;
}
bool t_lower(const Value& v, const CallArgs&) { return v.is_string() && pystr::lower(v.str()) == v.str(); }
bool t_upper(const Value& v, const CallArgs&) { return v.is_string() && pystr::upper(v.str()) == v.str(); }

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},     {"boolean", t_boolean},
      {"true", t_true},       {"false", t_false},         {"integer", t_integer}, {"float", t_float},
      {"number", t_number},   {"string", t_string},       {"mapping", t_mapping}, {"iterable", t_iterable},
      {"sequence", t_sequence}, {"callable", t_callable}, {"sameas", t_sameas}, {"eq", t_eq},
      {"equalto", t_eq},      {"==", t_eq},               {"ne", t_ne},         {"!=", t_ne},
      {"lt", t_lt},           {"lessthan", t_lt},         {"<", t_lt},          {"le", t_le},
      {"<=", t_le},           {"gt", t_gt},               {"greaterthan", t_gt}, {">", t_gt},
      {"ge", t_ge},           {">=", t_ge},               {"in", t_in},         {"odd", t_odd},
      {"even", t_even},       {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
  };
  return table;
}

}  // namespace

bool apply_test(Interpreter& in, std::string_view name, const Value& input, CallArgs& args) {
  const auto it = tests().find(name);
  if (it == tests().end()) fail("No test named '{}'.", name);
  in.tick();
  return it->second(input, args);
}

}  // namespace ember::jinja
