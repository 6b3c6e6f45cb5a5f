// jinja2's builtin filters that chat templates use, with jinja2's defaults (sort, unique,
// dictsort, min and max ignore case unless told otherwise), plus transformers' tojson.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/json_dump.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {
namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);

// "a.b.0" as jinja2's make_attrgetter reads it: a chain of item lookups.
Value attribute_path(const Value& v, const Value& path) {
  if (!path.is_string()) return get_item(v, path);
  Value cur = v;
  for (const std::string& part : pystr::split(path.str(), ".", -1)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = get_item(cur, digits ? Value::integer(std::stoll(part)) : Value::string(part));
  }
  return cur;
}

// The key jinja2 sorts and compares by: strings lower-cased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value::string(pystr::lower(v.str())) : v;
}

// A filter's or test's name given as an argument (map('upper'), select('odd')).
const std::string& name_arg(const Value& v, const char* filter) {
  if (!v.is_string()) fail("{}: the filter or test name must be a string, not '{}'", filter, v.type_name());
  return v.str();
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < args.pos.size(); ++i) rest.pos.push_back(args.pos[i]);
  rest.kw = args.kw;
  return rest;
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) { return Value::string(to_json(v, json_options(a))); }

Value f_length(Interpreter&, const Value& v, CallArgs&) { return Value::integer(length(v)); }

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  const bool boolean = a.get_or(1, "boolean", Value::boolean(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return a.get_or(0, "default_value", Value::string(""));
  return v;
}

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  const Value chars = a.get_or(0, "chars", Value::none());
  const Text t = to_text(v);
  size_t b = 0, e = 0;
  pystr::strip_range(t.bytes, chars.is_string() ? chars.str() : "", true, true, &b, &e);
  return Value::string(t.substr(b, e));
}

Value f_string(Interpreter&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value::string(to_text(v)); }
Value f_upper(Interpreter&, const Value& v, CallArgs&) { return Value::string(derived_text(to_text(v), pystr::upper(to_text(v).bytes))); }
Value f_lower(Interpreter&, const Value& v, CallArgs&) { return Value::string(derived_text(to_text(v), pystr::lower(to_text(v).bytes))); }
Value f_title(Interpreter&, const Value& v, CallArgs&) { return Value::string(derived_text(to_text(v), pystr::title(to_text(v).bytes))); }
Value f_capitalize(Interpreter&, const Value& v, CallArgs&) {
  return Value::string(derived_text(to_text(v), pystr::capitalize(to_text(v).bytes)));
}
Value f_safe(Interpreter&, const Value& v, CallArgs&) { return Value::markup(to_text(v)); }

Value f_escape(Interpreter&, const Value& v, CallArgs&) {
  return v.is_markup() ? v : Value::markup(html_escape(to_text(v)));
}
Value f_forceescape(Interpreter&, const Value& v, CallArgs&) { return Value::markup(html_escape(to_text(v))); }

Value f_join(Interpreter&, const Value& v, CallArgs& a) {
  const Text sep = to_text(a.get_or(0, "d", Value::string("")));
  const Value* attr = a.get(1, "attribute");
  Text out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out.append(sep);
    out.append(to_text(attr ? attribute_path(item, *attr) : item));
    first = false;
  }
  return Value::string(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  Array out;
  if (!v.truthy()) return Value::generator({});  // jinja2: `if value:` before iterating
  const Value* attr = a.get(SIZE_MAX, "attribute");
  if (!attr && a.pos.empty()) fail("map needs a filter name or attribute=");
  CallArgs rest = rest_args(a, 1);
  for (const Value& item : iterate(v)) {
    in.tick();
    if (attr) {
      Value got = attribute_path(item, *attr);
      if (got.is_undefined())
        if (const Value* d = a.get(SIZE_MAX, "default")) got = *d;
      out.push_back(std::move(got));
    } else {
      out.push_back(apply_filter(in, name_arg(a.pos[0], "map"), item, rest));
    }
  }
  return Value::generator(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select(Interpreter& in, const Value& v, CallArgs& a, bool by_attr, bool keep) {
  const size_t test_at = by_attr ? 1 : 0;
  if (by_attr && a.pos.empty()) fail("selectattr needs an attribute name");
  CallArgs rest = rest_args(a, test_at + 1);
  Array out;
  if (!v.truthy()) return Value::generator({});
  for (const Value& item : iterate(v)) {
    in.tick();
    const Value subject = by_attr ? attribute_path(item, a.pos[0]) : item;
    const bool pass = a.pos.size() > test_at ? apply_test(in, name_arg(a.pos[test_at], "select"), subject, rest) : subject.truthy();
    if (pass == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, true, false); }

Value pair(const Dict& d, const std::pair<std::string, Value>& e) {
  return Value::tuple({d.key_value(e.first), e.second});
}

Value f_items(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  Array out;
  for (const auto& e : v.entries().items) out.push_back(pair(v.entries(), e));
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
  if (!v.is_dict()) fail("dictsort needs a mapping");
  const bool cs = a.get_or(0, "case_sensitive", Value::boolean(false)).truthy();
  const Value by = a.get_or(1, "by", Value::string("key"));
  const bool reverse = a.get_or(2, "reverse", Value::boolean(false)).truthy();
  const size_t at = by.is_string() && by.str() == "value" ? 1 : 0;
  Array out;
  for (const auto& e : v.entries().items) out.push_back(pair(v.entries(), e));
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
    return less(sort_key(x.items()[at], cs), sort_key(y.items()[at], cs)) != reverse;
  });
  return Value::list(std::move(out));
}

Value f_first(Interpreter&, const Value& v, CallArgs&) {
  const Array items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_generator()) fail("'generator' object is not reversible");
  const Array items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}
Value f_list(Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }
Value f_reverse(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) return get_slice(v, Value::none(), Value::none(), Value::integer(-1));
  Array items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_sort(Interpreter&, const Value& v, CallArgs& a) {
  const bool reverse = a.get_or(0, "reverse", Value::boolean(false)).truthy();
  const bool cs = a.get_or(1, "case_sensitive", Value::boolean(false)).truthy();
  const Value* attr = a.get(2, "attribute");
  Array items = iterate(v);
  auto key = [&](const Value& x) { return sort_key(attr ? attribute_path(x, *attr) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return Value::list(std::move(items));
}

Value f_unique(Interpreter&, const Value& v, CallArgs& a) {
  const bool cs = a.get_or(0, "case_sensitive", Value::boolean(false)).truthy();
  const Value* attr = a.get(1, "attribute");
  Array out, seen;
  for (const Value& item : iterate(v)) {
    const Value k = sort_key(attr ? attribute_path(item, *attr) : item, cs);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value extreme(const Value& v, CallArgs& a, bool want_max) {
  const bool cs = a.get_or(0, "case_sensitive", Value::boolean(false)).truthy();
  const Value* attr = a.get(1, "attribute");
  const Array items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const Value* best = &items[0];
  auto key = [&](const Value& x) { return sort_key(attr ? attribute_path(x, *attr) : x, cs); };
  for (const Value& item : items)
    if (want_max ? less(key(*best), key(item)) : less(key(item), key(*best))) best = &item;
  return *best;
}
Value f_min(Interpreter&, const Value& v, CallArgs& a) { return extreme(v, a, false); }
Value f_max(Interpreter&, const Value& v, CallArgs& a) { return extreme(v, a, true); }

Value f_sum(Interpreter&, const Value& v, CallArgs& a) {
  const Value* attr = a.get(0, "attribute");
  Value total = a.get_or(1, "start", Value::integer(0));
  for (const Value& item : iterate(v)) total = binary_op("+", total, attr ? attribute_path(item, *attr) : item);
  return total;
}

Value f_replace(Interpreter&, const Value& v, CallArgs& a) {
  const Text t = to_text(v);
  const Value* from = a.get(0, "old");
  const Value* to = a.get(1, "new");
  if (!from || !to) fail("replace needs old and new");
  const Value count = a.get_or(2, "count", Value::none());
  const Text to_t = to_text(*to);
  std::string out = pystr::replace(t.bytes, to_text(*from).bytes, to_t.bytes, count.is_none() ? -1 : count.as_int());
  Text r = t.has_data() || to_t.has_data() ? Text::from_data(std::move(out)) : Text{std::move(out), {}};
  return Value::string(std::move(r));
}

// Python's int(x), then int(float(x)), else the default (jinja2's do_int).
Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  const Value fallback = a.get_or(0, "default", Value::integer(0));
  if (v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Bool) return Value::integer(v.as_int());
  if (v.kind() == Value::Kind::Float) return std::isfinite(v.as_double()) ? Value::integer(static_cast<int64_t>(v.as_double())) : fallback;
  if (!v.is_string()) return fallback;
  size_t b = 0, e = 0;
  pystr::strip_range(v.str(), "", true, true, &b, &e);
  const std::string s = v.str().substr(b, e - b);
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used, 10);
    if (used == s.size()) return Value::integer(i);
    const double d = std::stod(s, &used);
    if (used == s.size() && std::isfinite(d)) return Value::integer(static_cast<int64_t>(d));
  } catch (const std::exception&) {
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  const Value fallback = a.get_or(0, "default", Value::number(0.0));
  if (v.is_number()) return Value::number(v.as_double());
  if (!v.is_string()) return fallback;
  try {
    size_t used = 0;
    const double d = std::stod(v.str(), &used);
    if (used == v.str().size()) return Value::number(d);
  } catch (const std::exception&) {
  }
  return fallback;
}

Value f_abs(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_number()) fail("bad operand type for abs(): '{}'", v.type_name());
  return v.kind() == Value::Kind::Float ? Value::number(std::fabs(v.as_double())) : Value::integer(std::llabs(v.as_int()));
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  const int64_t precision = a.get_or(0, "precision", Value::integer(0)).as_int();
  const std::string method = name_arg(a.get_or(1, "method", Value::string("common")), "round");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value::number(r / scale);
}

// jinja2's do_indent: every line after the first (and the first when first=True) gets the
// indent; blank lines only when blank=True.
Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
  const Value width = a.get_or(0, "width", Value::integer(4));
  const bool first = a.get_or(1, "first", Value::boolean(false)).truthy();
  const bool blank = a.get_or(2, "blank", Value::boolean(false)).truthy();
  const std::string pad = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1024)), ' ');
  const Text t = to_text(v);
  const std::vector<std::string> lines = pystr::splitlines(t.bytes + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (first) out = pad + out;
  return Value::string(derived_text(t, std::move(out)));
}

Value f_attr(Interpreter&, const Value& v, CallArgs& a) {
  const Value* name = a.get(0, "name");
  if (!name || !name->is_string()) fail("attr needs a name");
  return get_attr(v, name->str());
}

Value f_center(Interpreter&, const Value& v, CallArgs& a) {
  const Text t = to_text(v);
  const int64_t width = a.get_or(0, "width", Value::integer(80)).as_int();
  const auto n = static_cast<int64_t>(pystr::codepoint_count(t.bytes));
  if (width <= n) return Value::string(t);
  const int64_t total = std::min<int64_t>(width - n, static_cast<int64_t>(kMaxStringBytes));
  const int64_t left = total / 2 + (total & width & 1);  // Python's str.center rounding
  return Value::string(derived_text(t, std::string(static_cast<size_t>(left), ' ') + t.bytes +
                                             std::string(static_cast<size_t>(total - left), ' ')));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  return Value::integer(static_cast<int64_t>(pystr::split(to_text(v).bytes, "", -1).size()));
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"tojson", f_tojson},       {"length", f_length},       {"count", f_length},     {"default", f_default},
      {"d", f_default},           {"trim", f_trim},           {"string", f_string},    {"upper", f_upper},
      {"lower", f_lower},         {"title", f_title},         {"capitalize", f_capitalize}, {"safe", f_safe},
      {"escape", f_escape},       {"e", f_escape},            {"forceescape", f_forceescape}, {"join", f_join},
      {"map", f_map},             {"select", f_select},       {"reject", f_reject},    {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"items", f_items},       {"dictsort", f_dictsort}, {"first", f_first},
      {"last", f_last},           {"list", f_list},           {"reverse", f_reverse},  {"sort", f_sort},
      {"unique", f_unique},       {"min", f_min},             {"max", f_max},          {"sum", f_sum},
      {"replace", f_replace},     {"int", f_int},             {"float", f_float},      {"abs", f_abs},
      {"round", f_round},         {"indent", f_indent},       {"attr", f_attr},        {"center", f_center},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

Value apply_filter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args) {
  const auto it = filters().find(name);
  if (it == filters().end()) fail("No filter named '{}'.", name);
  in.tick();
  return it->second(in, input, args);
}

}  // namespace ember::jinja
