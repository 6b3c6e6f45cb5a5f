#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "grammar/gbnf_text.h"
#include "grammar/grammar.h"
#include "grammar/schema_strings.h"
#include "util/error.h"

namespace ember::grammar {
namespace {

// Shared rules every schema grammar may use (\u escapes: no lone surrogates, which JSON
// parsers refuse). Whitespace is bounded so a sampled model
// cannot wander off into endless blanks; every value rule ends with ws.
const char* kSharedRules = R"(ws ::= | " " | "\n" [ \t]{0,20}
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" json-hex4)
json-hex4 ::= [0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2}
json-string ::= "\"" json-char* "\"" ws
json-number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? ws
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15}) ws
json-boolean ::= ("true" | "false") ws
json-null ::= "null" ws
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ":" ws json-value ("," ws json-string ":" ws json-value)*)? "}" ws
json-array ::= "[" ws (json-value ("," ws json-value)*)? "]" ws
)";

const std::set<std::string, std::less<>> kIgnored = {"title", "description", "default", "examples", "$schema", "$id",
                                                      "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                                      "definitions"};
const std::set<std::string, std::less<>> kHandled = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "items", "minItems", "maxItems",
    "$ref", "anyOf", "oneOf", "allOf", "minLength", "maxLength", "pattern", "format"};

constexpr int kMaxDepth = 64;

}  // namespace

struct SchemaCompiler::Impl {
  std::string out;
  int next_rule = 0;
  const json::Value* doc = nullptr;
  std::map<std::pair<const json::Value*, std::string>, std::string> refs;  // (doc, ref) -> rule

  [[noreturn]] static void unsupported(const std::string& what, const std::string& path) {
    fail(ErrorKind::InvalidArgument, "json schema: {} at {}", what, path.empty() ? "/" : path);
  }

  std::string fresh_rule_name() { return fmt::format("s{}", next_rule++); }

  std::string add_rule(const std::string& body) {
    const std::string name = fresh_rule_name();
    out += fmt::format("{} ::= {}\n", name, body);
    if (out.size() > kMaxGrammarBytes) fail(ErrorKind::InvalidArgument, "json schema: its grammar is over {} bytes", kMaxGrammarBytes);
    return name;
  }

  static size_t count(const json::Value& v, const char* key, const std::string& path) {
    if (!v.is_number_integer() || json::as_int(v) < 0) unsupported(std::string(key) + " must be a non-negative integer", path);
    const auto n = static_cast<size_t>(json::as_int(v));
    if (n > kMaxRepetition) unsupported(std::string(key) + " " + std::to_string(n) + " is over " + std::to_string(kMaxRepetition), path);
    return n;
  }

  static std::string repeat_suffix(size_t lo, size_t hi, bool bounded) {
    if (!bounded) return fmt::format("{{{},}}", lo);
    return fmt::format("{{{},{}}}", lo, hi);
  }

  std::string visit(const json::Value& s, const std::string& path, int depth);
  std::string visit_keywords(const json::Value& s, const std::string& path, int depth);
  std::string visit_type(const json::Value& s, const std::string& type, const std::string& path, int depth);
  std::string visit_object(const json::Value& s, const std::string& path, int depth);
  std::string visit_array(const json::Value& s, const std::string& path, int depth);
  std::string visit_string(const json::Value& s, const std::string& path);
  std::string visit_ref(const std::string& ref, const std::string& path, int depth);
  std::string alternatives(const json::Value& list, const char* key, const std::string& path, int depth);
};

std::string SchemaCompiler::Impl::visit(const json::Value& s, const std::string& path, int depth) {
  if (depth > kMaxDepth) unsupported("nesting deeper than " + std::to_string(kMaxDepth), path);
  if (s.is_boolean()) {
    if (!json::as_bool(s)) unsupported("the schema false (nothing is valid)", path);
    return "json-value";
  }
  if (!s.is_object()) unsupported("a schema must be an object or a boolean", path);
  for (const auto& [key, value] : json::as_object(s))
    if (!kIgnored.contains(key) && !kHandled.contains(key)) unsupported("unsupported keyword '" + key + "'", path);
  return visit_keywords(s, path, depth);
}

std::string SchemaCompiler::Impl::visit_keywords(const json::Value& s, const std::string& path, int depth) {
  if (const json::Value* ref = json::find(s, "$ref")) {
    if (!ref->is_string()) unsupported("$ref must be a string", path);
    return visit_ref(json::as_string(*ref), path, depth);
  }
  if (const json::Value* c = json::find(s, "const")) return "(" + gbnf_literal(c->dump()) + " ws)";
  if (const json::Value* e = json::find(s, "enum")) {
    if (!e->is_array() || e->empty()) unsupported("enum must be a non-empty array", path);
    std::string body = "(";
    for (size_t i = 0; i < e->size(); ++i) body += (i ? " | " : "") + gbnf_literal((*e)[i].dump());
    return add_rule(body + ") ws");
  }
  for (const char* key : {"anyOf", "oneOf", "allOf"})
    if (const json::Value* list = json::find(s, key)) return alternatives(*list, key, path, depth);
  const json::Value* type = json::find(s, "type");
  if (!type) {
    if (json::find(s, "properties") || json::find(s, "additionalProperties")) return visit_type(s, "object", path, depth);
    if (json::find(s, "items")) return visit_type(s, "array", path, depth);
    return "json-value";
  }
  if (type->is_string()) return visit_type(s, json::as_string(*type), path, depth);
  if (!type->is_array() || type->empty()) unsupported("type must be a string or a non-empty array", path);
  std::string body = "(";
  for (size_t i = 0; i < type->size(); ++i) {
    if (!(*type)[i].is_string()) unsupported("type must be a string or a non-empty array", path);
    body += (i ? " | " : "") + visit_type(s, json::as_string((*type)[i]), path, depth);
  }
  return add_rule(body + ")");
}

std::string SchemaCompiler::Impl::alternatives(const json::Value& list, const char* key, const std::string& path, int depth) {
  if (!list.is_array() || list.empty()) unsupported(std::string(key) + " must be a non-empty array", path);
  if (std::string_view(key) == "allOf" && list.size() != 1) unsupported("allOf with more than one schema", path);
  std::string body = "(";
  for (size_t i = 0; i < list.size(); ++i)
    body += (i ? " | " : "") + visit(list[i], path + "/" + key + "/" + std::to_string(i), depth + 1);
  return add_rule(body + ")");
}

std::string SchemaCompiler::Impl::visit_type(const json::Value& s, const std::string& type, const std::string& path, int depth) {
  if (type == "object") return visit_object(s, path, depth);
  if (type == "array") return visit_array(s, path, depth);
  if (type == "string") return visit_string(s, path);
  if (type == "number") return "json-number";
  if (type == "integer") return "json-integer";
  if (type == "boolean") return "json-boolean";
  if (type == "null") return "json-null";
  unsupported("unknown type '" + type + "'", path);
}

// "#" and "#/$defs/name" or "#/definitions/name" in the current document; each becomes one
// rule, named before it is compiled so recursive schemas refer to it.
std::string SchemaCompiler::Impl::visit_ref(const std::string& ref, const std::string& path, int depth) {
  const auto key = std::make_pair(doc, ref);
  if (auto it = refs.find(key); it != refs.end()) return it->second;
  const json::Value* target = nullptr;
  if (ref == "#") {
    target = doc;
  } else {
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (ref.rfind(prefix, 0) != 0) continue;
      const json::Value* defs = json::find(*doc, std::string_view(prefix).substr(2, std::string_view(prefix).size() - 3));
      if (defs) target = json::find(*defs, ref.substr(std::string_view(prefix).size()));
    }
  }
  if (!target) unsupported("$ref '" + ref + "' does not resolve (only #, #/$defs/... and #/definitions/...)", path);
  const std::string name = fresh_rule_name();
  refs.emplace(key, name);
  const std::string body = visit(*target, ref.substr(1), depth + 1);
  out += name + " ::= " + body + "\n";
  return name;
}

std::string SchemaCompiler::Impl::visit_string(const json::Value& s, const std::string& path) {
  const json::Value* pattern = json::find(s, "pattern");
  const json::Value* format = json::find(s, "format");
  const json::Value* min = json::find(s, "minLength");
  const json::Value* max = json::find(s, "maxLength");
  if ((pattern || format) && (min || max)) unsupported("minLength/maxLength together with pattern or format", path);
  if (pattern && format) unsupported("pattern together with format", path);
  if (pattern) {
    if (!pattern->is_string()) unsupported("pattern must be a string", path);
    return add_rule("\"\\\"\" " + pattern_to_gbnf(json::as_string(*pattern)) + " \"\\\"\" ws");
  }
  if (format) {
    if (!format->is_string()) unsupported("format must be a string", path);
    return add_rule("\"\\\"\" " + format_to_gbnf(json::as_string(*format)) + " \"\\\"\" ws");
  }
  if (!min && !max) return "json-string";
  const size_t lo = min ? count(*min, "minLength", path) : 0;
  const size_t hi = max ? count(*max, "maxLength", path) : 0;
  if (max && hi < lo) unsupported("maxLength below minLength", path);
  return add_rule("\"\\\"\" json-char" + repeat_suffix(lo, hi, max != nullptr) + " \"\\\"\" ws");
}

std::string SchemaCompiler::Impl::visit_array(const json::Value& s, const std::string& path, int depth) {
  const json::Value* items = json::find(s, "items");
  const std::string item = items ? visit(*items, path + "/items", depth + 1) : "json-value";
  const json::Value* min = json::find(s, "minItems");
  const json::Value* max = json::find(s, "maxItems");
  const size_t lo = min ? count(*min, "minItems", path) : 0;
  const size_t hi = max ? count(*max, "maxItems", path) : 0;
  if (max && hi < lo) unsupported("maxItems below minItems", path);
  if (max && hi == 0) return add_rule("\"[\" ws \"]\" ws");
  const std::string more = "(\",\" ws " + item + ")";
  const size_t more_lo = lo > 0 ? lo - 1 : 0;
  const std::string list = item + " " + more + repeat_suffix(more_lo, max ? hi - 1 : 0, max != nullptr);
  return add_rule("\"[\" ws " + (lo == 0 ? "(" + list + ")?" : list) + " \"]\" ws");
}

// Properties in the schema's order, each optional one possibly absent. Rule first_i: the
// properties from i on when none was written yet (no comma before the next); rest_i: after
// one was (a comma first). Extra keys, when allowed, come after the declared ones.
std::string SchemaCompiler::Impl::visit_object(const json::Value& s, const std::string& path, int depth) {
  const json::Value* props = json::find(s, "properties");
  const json::Value* extra = json::find(s, "additionalProperties");
  if (props && !props->is_object()) unsupported("properties must be an object", path);
  std::set<std::string> required;
  if (const json::Value* r = json::find(s, "required")) {
    if (!r->is_array()) unsupported("required must be an array", path);
    for (const json::Value& name : json::as_array(*r)) {
      if (!name.is_string()) unsupported("required must list strings", path);
      required.insert(json::as_string(name));
      if (!props || !json::find(*props, json::as_string(name))) unsupported("required property '" + json::as_string(name) + "' is not in properties", path);
    }
  }
  if (!props && (!extra || !extra->is_boolean() || json::as_bool(*extra))) {
    if (!extra || extra->is_boolean()) return "json-object";
  }
  std::string extra_kv;
  if (extra && !(extra->is_boolean() && !json::as_bool(*extra)))
    extra_kv = "json-string \":\" ws " + (extra->is_boolean() ? std::string("json-value") : visit(*extra, path + "/additionalProperties", depth + 1));
  std::string first = extra_kv.empty() ? "\"\"" : add_rule("(" + extra_kv + " (\",\" ws " + extra_kv + ")*)?");
  std::string rest = extra_kv.empty() ? "\"\"" : add_rule("(\",\" ws " + extra_kv + ")*");
  if (props) {
    const auto& members = json::as_object(*props);
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      const std::string kv = gbnf_literal(json::quote(it->first)) + " ws \":\" ws " +
                             visit(it->second, path + "/properties/" + it->first, depth + 1);
      const bool optional = !required.contains(it->first);
      const std::string new_first = add_rule(kv + " " + rest + (optional ? " | " + first : ""));
      rest = add_rule("\",\" ws " + kv + " " + rest + (optional ? " | " + rest : ""));
      first = new_first;
    }
  }
  return add_rule("\"{\" ws " + first + " \"}\" ws");
}

SchemaCompiler::SchemaCompiler() : impl_(std::make_unique<Impl>()) {}
SchemaCompiler::~SchemaCompiler() = default;

std::string SchemaCompiler::compile(const json::Value& schema, const std::string& name) {
  const json::Value* saved = impl_->doc;
  impl_->doc = &schema;
  const std::string body = impl_->visit(schema, "", 0);
  impl_->doc = saved;
  impl_->out += name + " ::= " + body + "\n";
  return name;
}

std::string SchemaCompiler::rules() const { return impl_->out + kSharedRules; }

std::string json_schema_to_gbnf(const json::Value& schema) {
  SchemaCompiler c;
  c.compile(schema, "root");
  return c.rules();
}

std::string json_object_gbnf() { return fmt::format("root ::= json-object\n{}", kSharedRules); }

}  // namespace ember::grammar
