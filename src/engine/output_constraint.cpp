#include "engine/output_constraint.h"

#include "grammar/grammar_cache.h"
#include "grammar/json_schema.h"
#include "util/error.h"

namespace ember {
namespace {

// Errors name the top-level field (the API's `param`), then where inside it.
std::shared_ptr<const grammar::Grammar> compile(const std::string& gbnf, const char* field) {
  try {
    return grammar::compiled_grammar(gbnf);
  } catch (const Error& e) {
    fail(ErrorKind::InvalidArgument, "field '{}': {}", field, e.what());
  }
}

std::shared_ptr<const grammar::Grammar> schema_field(const json::Value& schema, const char* field, const char* inside = "") {
  try {
    return json_schema_constraint(schema);
  } catch (const Error& e) {
    fail(ErrorKind::InvalidArgument, "field '{}'{}: {}", field, inside, e.what());
  }
}

std::shared_ptr<const grammar::Grammar> response_format(const json::Value& v) {
  const json::Value* type = v.is_object() ? json::find(v, "type") : nullptr;
  if (!type || !type->is_string())
    fail(ErrorKind::InvalidArgument, "field 'response_format' must be an object with a string 'type'");
  const std::string& t = json::as_string(*type);
  if (t == "text") return nullptr;
  if (t == "json_object") {
    if (const json::Value* schema = json::find(v, "schema")) return schema_field(*schema, "response_format", " (schema)");
    return compile(grammar::json_object_gbnf(), "response_format");
  }
  if (t != "json_schema")
    fail(ErrorKind::InvalidArgument, "field 'response_format': type '{}' is not one of text, json_object, json_schema", t);
  if (const json::Value* schema = json::find(v, "schema")) return schema_field(*schema, "response_format", " (schema)");
  const json::Value* js = json::find(v, "json_schema");
  if (!js || !js->is_object())
    fail(ErrorKind::InvalidArgument, "field 'response_format': json_schema must be an object with a 'schema'");
  if (const json::Value* strict = json::find(*js, "strict"); strict && !strict->is_null() && !strict->is_boolean())
    fail(ErrorKind::InvalidArgument, "field 'response_format': json_schema.strict must be a boolean");
  const json::Value* schema = json::find(*js, "schema");
  // OpenAI allows leaving the schema out; any JSON object is then what json_object gives.
  if (!schema || schema->is_null()) return compile(grammar::json_object_gbnf(), "response_format");
  return schema_field(*schema, "response_format", " (json_schema.schema)");
}

}  // namespace

std::shared_ptr<const grammar::Grammar> json_schema_constraint(const json::Value& schema) {
  const bool any = (schema.is_boolean() && json::as_bool(schema)) || (schema.is_object() && schema.empty());
  return grammar::compiled_grammar(any ? grammar::json_object_gbnf() : grammar::json_schema_to_gbnf(schema));
}

std::shared_ptr<const grammar::Grammar> tool_call_constraint(std::span<const grammar::ToolSchema> tools, bool parallel) {
  std::string gbnf;
  try {
    gbnf = grammar::tool_call_gbnf(tools, parallel);
  } catch (const Error& e) {
    fail(ErrorKind::InvalidArgument, "field 'tools': {}", e.what());
  }
  return compile(gbnf, "tools");
}

std::shared_ptr<const grammar::Grammar> output_constraint(const json::Value& body) {
  std::shared_ptr<const grammar::Grammar> out;
  int given = 0;
  if (const json::Value* v = json::find(body, "response_format"); v && !v->is_null()) {
    out = response_format(*v);
    given += out != nullptr;
  }
  if (const json::Value* v = json::find(body, "json_schema"); v && !v->is_null()) {
    out = schema_field(*v, "json_schema");
    ++given;
  }
  if (const json::Value* v = json::find(body, "grammar"); v && !v->is_null()) {
    if (!v->is_string()) fail(ErrorKind::InvalidArgument, "field 'grammar' must be a string of GBNF");
    if (!json::as_string(*v).empty()) {
      out = compile(json::as_string(*v), "grammar");
      ++given;
    }
  }
  if (given > 1)
    fail(ErrorKind::InvalidArgument, "give only one of 'response_format' (json), 'json_schema' and 'grammar'");
  return out;
}

}  // namespace ember
