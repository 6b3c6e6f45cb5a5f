// The functions a template can call by name: jinja2's range, namespace and dict, and the two
// transformers adds, raise_exception and strftime_now.
#include <ctime>

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"

namespace ember::jinja {
namespace {

Value range(Interpreter&, CallArgs& a) {
  if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) fail("range() takes 1 to 3 integer arguments");
  for (const Value& v : a.pos)
    if (v.kind() != Value::Kind::Int && v.kind() != Value::Kind::Bool) fail("range() arguments must be integers");
  const int64_t start = a.pos.size() > 1 ? a.pos[0].as_int() : 0;
  const int64_t stop = a.pos.size() > 1 ? a.pos[1].as_int() : a.pos[0].as_int();
  const int64_t step = a.pos.size() > 2 ? a.pos[2].as_int() : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= kMaxListItems) fail("range() is longer than {} items", kMaxListItems);
    out.push_back(Value::integer(i));
  }
  return Value::list(std::move(out));
}

Dict keyword_dict(CallArgs& a, const char* what) {
  Dict d;
  for (const Value& p : a.pos) {
    if (!p.is_dict()) fail("{}() takes a mapping or keyword arguments", what);
    for (const auto& [k, v] : p.entries().items) d.set(k, v);
  }
  for (auto& [k, v] : a.kw) d.set(k, v);
  return d;
}

Value make_namespace(Interpreter& in, CallArgs& a) {
  Value ns = Value::ns(keyword_dict(a, "namespace"));
  in.own_namespace(ns);
  return ns;
}
Value make_dict(Interpreter&, CallArgs& a) { return Value::dict(keyword_dict(a, "dict")); }

Value raise_exception(Interpreter&, CallArgs& a) {
  const Value* msg = a.get(0, "message");
  throw Raised(msg ? to_text(*msg).bytes : std::string("raise_exception() called"));
}

Value strftime_now(Interpreter& in, CallArgs& a) {
  const Value* format = a.get(0, "format");
  if (!format || !format->is_string()) fail("strftime_now() needs a format string");
  const std::time_t t = in.now();
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[512];
  const size_t n = format->str().size() < 200 ? std::strftime(buf, sizeof buf, format->str().c_str(), &tm) : 0;
  if (n == 0 && !format->str().empty()) fail("strftime_now(): format too long or empty result");
  return Value::string(std::string(buf, n));
}

}  // namespace

void add_globals(Dict& globals) {
  globals.set("range", Value::callable(range, "range"));
  globals.set("namespace", Value::callable(make_namespace, "namespace"));
  globals.set("dict", Value::callable(make_dict, "dict"));
  globals.set("raise_exception", Value::callable(raise_exception, "raise_exception"));
  globals.set("strftime_now", Value::callable(strftime_now, "strftime_now"));
}

}  // namespace ember::jinja
