// The Python methods templates call on str, dict and list values. jinja2's immutable sandbox
// (which transformers renders in) refuses the methods that modify a list or dict; so does this.
#include <algorithm>

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {
namespace {

const std::string& str_arg(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.get(i, name);
  if (!v || !v->is_string()) fail("str.{}() needs a string argument", method);
  return v->str();
}

// Optional `chars`/`sep` argument: "" when absent or None.
std::string opt_str(const CallArgs& a, size_t i, const char* name) {
  const Value* v = a.get(i, name);
  return v && v->is_string() ? v->str() : std::string();
}

Value strip(const Value& s, const CallArgs& a, bool left, bool right) {
  size_t b = 0, e = 0;
  pystr::strip_range(s.str(), opt_str(a, 0, "chars"), left, right, &b, &e);
  return Value::string(s.text().substr(b, e));
}

Value split_result(const Value& s, const std::vector<std::string>& parts) {
  Array out;
  for (const std::string& p : parts) out.push_back(Value::string(derived_text(s.text(), p)));
  return Value::list(std::move(out));
}

bool affix(const Value& s, const CallArgs& a, bool prefix) {
  const Value* v = a.get(0, "prefix");
  if (!v) fail("startswith/endswith needs an argument");
  const Array options = v->is_list() ? v->items() : Array{*v};
  const std::string& str = s.str();
  for (const Value& o : options) {
    if (!o.is_string()) fail("startswith/endswith needs strings");
    const std::string& x = o.str();
    if (x.size() <= str.size() && (prefix ? str.compare(0, x.size(), x) : str.compare(str.size() - x.size(), x.size(), x)) == 0)
      return true;
  }
  return false;
}

// str.format with {} / {0} / {name} fields and {{ }} escapes (no format specs).
Value format(const Value& s, const CallArgs& a) {
  const std::string& f = s.str();
  Text out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if ((f[i] == '{' || f[i] == '}') && i + 1 < f.size() && f[i + 1] == f[i]) {
      out.append(std::string_view(&f[i], 1));
      ++i;
      continue;
    }
    if (f[i] != '{') {
      out.append(std::string_view(&f[i], 1));
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) fail("str.format: single '{{' encountered");
    const std::string field = f.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) fail("str.format: field '{}' is not supported", field);
    const Value* v = nullptr;
    if (field.empty()) v = auto_index < a.pos.size() ? &a.pos[auto_index++] : nullptr;
    else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) v = a.get(std::stoul(field), "");
    else v = a.get(SIZE_MAX, field);
    if (!v) fail("str.format: no argument for field '{{{}}}'", field);
    out.append(to_text(*v));
    i = close;
  }
  if (s.text().has_data()) return Value::string(Text::from_data(out.bytes));
  return Value::string(std::move(out));
}

bool string_method(const Value& s, std::string_view m, CallArgs& a, Value* r) {
  const std::string& str = s.str();
  auto maxsplit = [&] { return a.get_or(1, "maxsplit", Value::integer(-1)).as_int(); };
  if (m == "strip") *r = strip(s, a, true, true);
  else if (m == "lstrip") *r = strip(s, a, true, false);
  else if (m == "rstrip") *r = strip(s, a, false, true);
  else if (m == "split") *r = split_result(s, pystr::split(str, opt_str(a, 0, "sep"), maxsplit()));
  else if (m == "rsplit") *r = split_result(s, pystr::rsplit(str, opt_str(a, 0, "sep"), maxsplit()));
  else if (m == "splitlines") *r = split_result(s, pystr::splitlines(str));
  else if (m == "startswith") *r = Value::boolean(affix(s, a, true));
  else if (m == "endswith") *r = Value::boolean(affix(s, a, false));
  else if (m == "upper") *r = Value::string(derived_text(s.text(), pystr::upper(str)));
  else if (m == "lower") *r = Value::string(derived_text(s.text(), pystr::lower(str)));
  else if (m == "title") *r = Value::string(derived_text(s.text(), pystr::title(str)));
  else if (m == "capitalize") *r = Value::string(derived_text(s.text(), pystr::capitalize(str)));
  else if (m == "replace") {
    const int64_t count = a.get_or(2, "count", Value::integer(-1)).as_int();
    const Text to = to_text(a.get_or(1, "new", Value::string("")));
    std::string out = pystr::replace(str, str_arg(a, 0, "old", "replace"), to.bytes, count);
    *r = Value::string(s.text().has_data() || to.has_data() ? Text::from_data(std::move(out)) : Text{std::move(out), {}});
  } else if (m == "find" || m == "rfind" || m == "count") {
    const std::string& sub = str_arg(a, 0, "sub", "find");
    if (m == "count") {
      int64_t n = 0;
      for (size_t p = str.find(sub); p != std::string::npos && !sub.empty(); p = str.find(sub, p + sub.size())) ++n;
      *r = Value::integer(sub.empty() ? static_cast<int64_t>(pystr::codepoint_count(str)) + 1 : n);
    } else {
      const size_t p = m == "find" ? str.find(sub) : str.rfind(sub);
      *r = Value::integer(p == std::string::npos ? -1 : static_cast<int64_t>(pystr::codepoint_count(str.substr(0, p))));
    }
  } else if (m == "join") {
    Text out;
    bool first = true;
    for (const Value& item : iterate(a.get_or(0, "iterable", Value::list()))) {
      if (!item.is_string()) fail("str.join: sequence item is '{}', not str", item.type_name());
      if (!first) out.append(s.text());
      out.append(item.text());
      first = false;
    }
    *r = Value::string(std::move(out));
  } else if (m == "format") *r = format(s, a);
  else if (m == "isdigit" || m == "isalpha" || m == "isalnum" || m == "isspace") {
    bool all = !str.empty();
    for (char c : str) {
      const bool digit = c >= '0' && c <= '9', alpha = (c | 32) >= 'a' && (c | 32) <= 'z';
      const bool space = c == ' ' || (c >= 9 && c <= 13);
      all = all && (m == "isdigit" ? digit : m == "isalpha" ? alpha : m == "isalnum" ? digit || alpha : space);
    }
    *r = Value::boolean(all);
  } else if (m == "islower") *r = Value::boolean(pystr::lower(str) == str && pystr::upper(str) != str);
  else if (m == "isupper") *r = Value::boolean(pystr::upper(str) == str && pystr::lower(str) != str);
  else return false;
  return true;
}

bool dict_method(const Value& d, std::string_view m, CallArgs& a, Value* r) {
  const Dict& dict = d.entries();
  auto key_value = [&](const std::string& k) { return dict.key_value(k); };
  if (m == "get") {
    const Value* key = a.get(0, "key");
    if (!key) fail("dict.get() needs a key");
    const Value* hit = key->is_string() || key->is_number() ? dict.find(Dict::stored_key(*key)) : nullptr;
    *r = hit ? *hit : a.get_or(1, "default", Value::none());
  } else if (m == "items") {
    Array out;
    for (const auto& [k, v] : dict.items) out.push_back(Value::tuple({key_value(k), v}));
    *r = Value::list(std::move(out));
  } else if (m == "keys") {
    Array out;
    for (const auto& [k, v] : dict.items) out.push_back(key_value(k));
    *r = Value::list(std::move(out));
  } else if (m == "values") {
    Array out;
    for (const auto& [k, v] : dict.items) out.push_back(v);
    *r = Value::list(std::move(out));
  } else if (m == "copy") {
    *r = Value::dict(dict);
  } else if (m == "pop" || m == "update" || m == "setdefault" || m == "clear" || m == "popitem") {
    fail("access to attribute '{}' of 'dict' object is unsafe.", m);
  } else {
    return false;
  }
  return true;
}

bool list_method(const Value& l, std::string_view m, CallArgs& a, Value* r) {
  if (m == "index" || m == "count") {
    const Value* x = a.get(0, "value");
    if (!x) fail("list.{}() needs an argument", m);
    int64_t n = 0, at = -1;
    for (size_t i = 0; i < l.items().size(); ++i)
      if (equal(l.items()[i], *x)) {
        if (at < 0) at = static_cast<int64_t>(i);
        ++n;
      }
    if (m == "index" && at < 0) fail("list.index(x): x not in list");
    *r = Value::integer(m == "index" ? at : n);
    return true;
  }
  if (m == "copy") {
    *r = Value::list(l.items());
    return true;
  }
  if (m == "append" || m == "pop" || m == "extend" || m == "insert" || m == "remove" || m == "sort" ||
      m == "reverse" || m == "clear")
    fail("access to attribute '{}' of 'list' object is unsafe.", m);
  return false;
}

}  // namespace

bool call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args, Value* result) {
  if (!name.empty() && name[0] == '_') fail("access to attribute '{}' is unsafe.", name);
  in.tick();
  if (obj.is_string()) return string_method(obj, name, args, result);
  if (obj.kind() == Value::Kind::Dict) return dict_method(obj, name, args, result);
  if (obj.is_list()) return list_method(obj, name, args, result);
  return false;
}

}  // namespace ember::jinja
