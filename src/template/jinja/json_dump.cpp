// The `tojson` filter as transformers defines it: Python's json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False). It replaces jinja2's own tojson, so nothing
// is HTML-escaped ('<', '>', '&', '\'' stay as they are).
#include "template/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "template/jinja/error.h"
#include "template/jinja/pystr.h"

namespace ember::jinja {
namespace {

void quote(std::string_view s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80 || !ensure_ascii) {
      out += static_cast<char>(c);
    } else {  // ensure_ascii: \uXXXX, with a surrogate pair above the BMP
      const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      uint32_t cp = c & (0x7F >> n);
      for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      i += n - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    }
  }
  out += '"';
}

class Dumper {
 public:
  explicit Dumper(const JsonOptions& o) : o_(o) {}

  void dump(const Value& v, int depth, std::string& out) {
    if (depth > 512) fail("tojson: data nests too deeply");
    if (out.size() > kMaxStringBytes) fail("tojson: output grew beyond {} bytes", kMaxStringBytes);
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.as_int()); return;
      case Value::Kind::Float: {
        const double d = v.as_double();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : pystr::float_repr(d);
        return;
      }
      case Value::Kind::String: quote(v.str(), o_.ensure_ascii, out); return;
      case Value::Kind::List:
        if (v.is_generator()) fail("Object of type generator is not JSON serializable");
        return list(v.items(), depth, out);
      case Value::Kind::Dict: return dict(v.entries(), depth, out);
      default: fail("Object of type {} is not JSON serializable", v.type_name());
    }
  }

 private:
  void newline(int depth, std::string& out) const {
    out += '\n';
    for (int i = 0; i < depth; ++i) out += o_.indent;
  }

  void list(const Array& items, int depth, std::string& out) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o_.item_separator;
      if (o_.indented) newline(depth + 1, out);
      dump(items[i], depth + 1, out);
    }
    if (o_.indented) newline(depth, out);
    out += ']';
  }

  void dict(const Dict& d, int depth, std::string& out) {
    if (d.items.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& e : d.items) entries.push_back(&e);
    if (o_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += o_.item_separator;
      if (o_.indented) newline(depth + 1, out);
      quote(to_text(d.key_value(entries[i]->first)).bytes, o_.ensure_ascii, out);
      out += o_.key_separator;
      dump(entries[i]->second, depth + 1, out);
    }
    if (o_.indented) newline(depth, out);
    out += '}';
  }

  const JsonOptions& o_;
};

}  // namespace

JsonOptions json_options(const CallArgs& args) {
  JsonOptions o;
  if (const Value* v = args.get(0, "ensure_ascii")) o.ensure_ascii = v->truthy();
  if (const Value* v = args.get(1, "indent"); v && !v->is_none()) {
    o.indented = true;
    if (v->is_string()) o.indent = v->str();
    else o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(v->as_int(), 0, 64)), ' ');
    o.item_separator = ",";
  }
  if (const Value* v = args.get(2, "separators"); v && !v->is_none()) {
    const Array parts = iterate(*v);
    if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
      fail("tojson: separators must be a pair of strings");
    o.item_separator = parts[0].str();
    o.key_separator = parts[1].str();
  }
  if (const Value* v = args.get(3, "sort_keys")) o.sort_keys = v->truthy();
  return o;
}

Text to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  Dumper(options).dump(v, 0, out);
  return holds_data(v) ? Text::from_data(std::move(out)) : Text{std::move(out), {}};
}

}  // namespace ember::jinja
