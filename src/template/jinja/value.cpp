#include "template/jinja/value.h"

#include <fmt/format.h>

#include "template/jinja/error.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {

void Text::append(const Text& other) {
  const auto offset = static_cast<uint32_t>(bytes.size());
  if (bytes.size() + other.bytes.size() > kMaxStringBytes) fail("a string grew beyond {} bytes", kMaxStringBytes);
  bytes += other.bytes;
  for (const Span& s : other.data) {
    if (!data.empty() && data.back().end == s.begin + offset) data.back().end = s.end + offset;
    else data.push_back({s.begin + offset, s.end + offset});
  }
}

Text Text::substr(size_t begin, size_t end) const {
  Text out;
  out.bytes = bytes.substr(begin, end - begin);
  for (const Span& s : data) {
    const size_t b = std::max<size_t>(s.begin, begin), e = std::min<size_t>(s.end, end);
    if (b < e) out.data.push_back({static_cast<uint32_t>(b - begin), static_cast<uint32_t>(e - begin)});
  }
  return out;
}

Text Text::from_data(std::string s) {
  Text t;
  t.bytes = std::move(s);
  if (!t.bytes.empty()) t.data.push_back({0, static_cast<uint32_t>(t.bytes.size())});
  return t;
}

Text derived_text(const Text& src, std::string bytes) {
  return src.has_data() ? Text::from_data(std::move(bytes)) : Text{std::move(bytes), {}};
}

// An int (or bool) key is "\x01i<digits>"; a str key that itself starts with \x01 gets "\x01s".
std::string Dict::stored_key(const Value& key) {
  if (key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool) return "\x01i" + std::to_string(key.as_int());
  if (!key.is_string()) fail("unhashable or unsupported dict key of type '{}'", key.type_name());
  if (!key.str().empty() && key.str()[0] == '\x01') return "\x01s" + key.str();
  return key.str();
}

Value Dict::key_value(const std::string& stored) const {
  if (stored.size() >= 2 && stored[0] == '\x01' && stored[1] == 'i') return Value::integer(std::stoll(stored.substr(2)));
  std::string s = stored.size() >= 2 && stored[0] == '\x01' ? stored.substr(2) : stored;
  return data_keys ? Value::string(Text::from_data(std::move(s))) : Value::string(std::move(s));
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(std::string key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(std::move(key), std::move(v));
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  v.i_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = d;
  return v;
}
Value Value::string(std::string s) {
  Text t;
  t.bytes = std::move(s);
  return string(std::move(t));
}
Value Value::string(Text t) {
  if (t.bytes.size() > kMaxStringBytes) fail("a string grew beyond {} bytes", kMaxStringBytes);
  Value v;
  v.kind_ = Kind::String;
  v.str_ = std::make_shared<const Text>(std::move(t));
  return v;
}
Value Value::list(Array items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<Array>(std::move(items));
  return v;
}
Value Value::markup(Text t) {
  Value v = string(std::move(t));
  v.markup_ = true;
  return v;
}
Value Value::generator(Array items) {
  Value v = list(std::move(items));
  v.generator_ = true;
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::ns(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::Namespace;
  return v;
}
Value Value::callable(Function f, std::string name) {
  Value v;
  v.kind_ = Kind::Callable;
  v.fn_ = std::make_shared<const Function>(std::move(f));
  v.name_ = std::make_shared<const std::string>(std::move(name));
  return v;
}
Value Value::undefined(std::string what) {
  Value v;
  v.name_ = std::make_shared<const std::string>(std::move(what));
  return v;
}

const std::string& Value::name() const {
  static const std::string none;
  return name_ ? *name_ : none;
}

Value Value::tuple(Array items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}

Value Value::from_json(const json::Value& j, size_t depth) {
  if (depth > json::kMaxDepth) fail("data nests deeper than {}", json::kMaxDepth);
  switch (j.type()) {
    case json::Value::value_t::null: return none();
    case json::Value::value_t::boolean: return boolean(j.get<bool>());
    case json::Value::value_t::number_integer: return integer(j.get<int64_t>());
    case json::Value::value_t::number_unsigned: return number(static_cast<double>(j.get<uint64_t>()));
    case json::Value::value_t::number_float: return number(j.get<double>());
    case json::Value::value_t::string: return string(Text::from_data(j.get<std::string>()));
    case json::Value::value_t::array: {
      Array items;
      for (const json::Value& item : j) items.push_back(from_json(item, depth + 1));
      return list(std::move(items));
    }
    case json::Value::value_t::object: {
      Dict d;
      d.data_keys = true;
      for (const auto& [k, item] : j.items()) d.items.emplace_back(Dict::stored_key(string(k)), from_json(item, depth + 1));
      return dict(std::move(d));
    }
    default: return none();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !str_->bytes.empty();
    case Kind::List: return generator_ || !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

bool Value::same_object(const Value& o) const {
  if (kind_ != o.kind_) return false;
  if (list_ || dict_) return list_ == o.list_ && dict_ == o.dict_;
  return equal(*this, o);
}

Text html_escape(const Text& t) {
  std::string out;
  for (char c : t.bytes) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return derived_text(t, std::move(out));
}

bool holds_data(const Value& v, size_t depth) {
  if (depth > json::kMaxDepth) return true;
  if (v.is_string()) return v.text().has_data();
  if (v.is_list())
    for (const Value& item : v.items())
      if (holds_data(item, depth + 1)) return true;
  if (v.is_dict())
    for (const auto& [k, item] : v.entries().items)
      if (holds_data(item, depth + 1)) return true;
  return false;
}

Text to_text(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::String: return v.text();
    case Value::Kind::Bool: return Text{v.as_bool() ? "True" : "False", {}};
    case Value::Kind::None: return Text{"None", {}};
    case Value::Kind::Int: return Text{fmt::format("{}", v.as_int()), {}};
    case Value::Kind::Float: return Text{pystr::float_repr(v.as_double()), {}};
    default: {
      // A list or dict prints as its repr; it holds data if anything in it does, and then the
      // whole text counts as data (a repr of user text must not turn into control tokens).
      Text t{repr(v), {}};
      if (holds_data(v) && !t.bytes.empty()) t.data.push_back({0, static_cast<uint32_t>(t.bytes.size())});
      return t;
    }
  }
}

std::string repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String: return pystr::string_repr(v.str());
    case Value::Kind::List: {
      if (v.is_generator()) return "<generator object>";
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) out += (i ? ", " : "") + repr(v.items()[i]);
      if (v.is_tuple()) return out + (v.items().size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : v.entries().items) {
        out += (first ? "" : ", ") + repr(v.entries().key_value(k)) + ": " + repr(item);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function " + v.name() + ">";
    case Value::Kind::Undefined: return "";
    default: return to_text(v).bytes;
  }
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::List: {
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!equal(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      if (a.entries().items.size() != b.entries().items.size()) return false;
      for (const auto& [k, item] : a.entries().items) {
        const Value* other = b.entries().find(k);
        if (!other || !equal(item, *other)) return false;
      }
      return true;
    }
    default: return a.same_object(b);
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list()) {
    const Array &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '{}' and '{}'", a.type_name(), b.type_name());
}

}  // namespace ember::jinja
