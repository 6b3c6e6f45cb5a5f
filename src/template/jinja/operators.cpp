// Python's operators, attribute and item lookup, slicing and iteration, as jinja2's sandbox
// applies them: a failed lookup gives Undefined, and using an Undefined (beyond printing,
// testing or iterating it) is an error.
#include <algorithm>
#include <cmath>

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {
namespace {

[[noreturn]] void undefined_used(const Value& v) { fail("{}", v.name().empty() ? "undefined value used" : v.name()); }

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  const bool floats = a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float;
  if (op == "/") {
    if (b.as_double() == 0) fail("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (floats) {
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "**") return Value::number(std::pow(x, y));
    if (y == 0) fail("float division by zero");
    const double q = std::floor(x / y);
    return op == "//" ? Value::number(q) : Value::number(x - q * y);
  }
  const int64_t x = a.as_int(), y = b.as_int();
  int64_t r = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
  else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
  else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
  else if (op == "**") {
    if (y < 0) return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
    r = 1;  // by squaring: 64 steps at most, whatever the exponent
    int64_t base = x;
    for (int64_t e = y; e > 0 && !overflow; e >>= 1) {
      if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
      if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
  } else {
    if (y == 0) fail("integer division or modulo by zero");
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors
    r = op == "//" ? q : x - q * y;
  }
  if (overflow) fail("integer overflow in '{}'", op);
  return Value::integer(r);
}

Value repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    if (seq.str().size() * static_cast<uint64_t>(times) > kMaxStringBytes) fail("a string grew beyond {} bytes", kMaxStringBytes);
    Text out;
    for (int64_t i = 0; i < times; ++i) out.append(seq.text());
    return Value::string(std::move(out));
  }
  if (seq.items().size() * static_cast<uint64_t>(times) > kMaxListItems) fail("a list grew beyond {} items", kMaxListItems);
  Array out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not {}", item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.items())
        if (equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return (item.is_string() || item.kind() == Value::Kind::Int) &&
                                                  container.entries().find(Dict::stored_key(item)) != nullptr;
    case Value::Kind::Undefined: return false;
    default: fail("argument of type '{}' is not iterable", container.type_name());
  }
}

}  // namespace

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "in") return Value::boolean(contains(b, a));
  if (op == "not in") return Value::boolean(!contains(b, a));
  if (op == "~") {
    Text t = to_text(a);
    t.append(to_text(b));
    return Value::string(std::move(t));
  }
  if (a.is_undefined()) undefined_used(a);
  if (b.is_undefined()) undefined_used(b);
  if (op == "<") return Value::boolean(less(a, b));
  if (op == ">") return Value::boolean(less(b, a));
  if (op == "<=") return Value::boolean(!less(b, a));
  if (op == ">=") return Value::boolean(!less(a, b));
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+" && a.is_string() && b.is_string()) {
    const bool markup = a.is_markup() || b.is_markup();
    Text t = markup && !a.is_markup() ? html_escape(a.text()) : a.text();
    t.append(markup && !b.is_markup() ? html_escape(b.text()) : b.text());
    return markup ? Value::markup(std::move(t)) : Value::string(std::move(t));
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    Array items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::list(std::move(items));
  }
  if (op == "*" && (a.is_string() || a.is_list()) && b.kind() == Value::Kind::Int) return repeat(a, b.as_int());
  if (op == "*" && (b.is_string() || b.is_list()) && a.kind() == Value::Kind::Int) return repeat(b, a.as_int());
  fail("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

Value get_attr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) undefined_used(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.entries().find(name)) return *v;
    return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
  }
  if (obj.is_list() && !name.empty() && name[0] >= '0' && name[0] <= '9')  // x.0 is x[0] in jinja2
    return get_item(obj, Value::integer(std::stoll(std::string(name))));
  return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_used(obj);
  if (obj.is_dict()) {
    if (key.is_string() || key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool)
      if (const Value* v = obj.entries().find(Dict::stored_key(key))) return *v;
    return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), repr(key)));
  }
  if (obj.is_generator()) return Value::undefined("'generator' object is not subscriptable");
  if ((obj.is_list() || obj.is_string()) && key.kind() == Value::Kind::Int) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
    } else {
      const std::vector<size_t> cps = pystr::codepoint_offsets(obj.str());
      const auto n = static_cast<int64_t>(cps.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::string(obj.text().substr(cps[static_cast<size_t>(i)], cps[static_cast<size_t>(i) + 1]));
    }
    return Value::undefined(fmt::format("{} index out of range", obj.type_name()));
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(fmt::format("'{}' object has no item {}", obj.type_name(), repr(key)));
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  if (obj.is_undefined()) undefined_used(obj);
  if (!obj.is_list() && !obj.is_string()) fail("'{}' object is not subscriptable", obj.type_name());
  std::vector<size_t> cps;
  if (obj.is_string()) cps = pystr::codepoint_offsets(obj.str());
  const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.items().size()) : static_cast<int64_t>(cps.size()) - 1;
  const int64_t step = step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) fail("slice step cannot be zero");
  auto bound = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    if (!v.is_number()) fail("slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = bound(start, step > 0 ? 0 : n - 1), e = bound(stop, step > 0 ? n : -1);
  if (obj.is_string() && step == 1)
    return Value::string(obj.text().substr(cps[static_cast<size_t>(b)], cps[static_cast<size_t>(std::max(b, e))]));
  Array items;
  Text text;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) {
    if (obj.is_list()) items.push_back(obj.items()[static_cast<size_t>(i)]);
    else text.append(obj.text().substr(cps[static_cast<size_t>(i)], cps[static_cast<size_t>(i) + 1]));
  }
  return obj.is_list() ? Value::list(std::move(items)) : Value::string(std::move(text));
}

Array iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List: return v.items();
    case Value::Kind::Dict: {
      Array keys;
      for (const auto& [k, item] : v.entries().items)
        keys.push_back(v.entries().key_value(k));
      return keys;
    }
    case Value::Kind::String: {
      Array chars;
      const std::vector<size_t> cps = pystr::codepoint_offsets(v.str());
      for (size_t i = 0; i + 1 < cps.size(); ++i) chars.push_back(Value::string(v.text().substr(cps[i], cps[i + 1])));
      return chars;
    }
    case Value::Kind::Undefined: return {};
    default: fail("'{}' object is not iterable", v.type_name());
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String: return static_cast<int64_t>(pystr::codepoint_count(v.str()));
    case Value::Kind::List:
      if (v.is_generator()) fail("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return static_cast<int64_t>(v.entries().items.size());
    case Value::Kind::Undefined: return 0;
    default: fail("object of type '{}' has no len()", v.type_name());
  }
}

}  // namespace ember::jinja
