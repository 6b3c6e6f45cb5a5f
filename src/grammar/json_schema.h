// JSON Schema to GBNF: the grammar of the JSON texts a schema accepts (a subset of them
// where the schema's language is not context-free, said below), for response_format and
// tool arguments.
//
// Supported: type (one or a list), properties, required, additionalProperties (false by
// default when properties are given: extra keys only when asked for), enum, const, items,
// minItems, maxItems, nested objects, $ref to "#", "#/$defs/..." or "#/definitions/...",
// anyOf and oneOf (as alternatives: oneOf's exclusivity is not enforced), string
// minLength/maxLength, pattern (a regular-expression subset, matched whole), format
// date, time, date-time, uuid. Annotations (title, description, default, examples ...) are
// ignored. Any other keyword is an error naming it. Properties come in the schema's order.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "util/json.h"

namespace ember::grammar {

// The grammar's text; its root rule is `root`. Throws Error(InvalidArgument)
// "json schema: unsupported keyword 'x' at /path" and the like.
std::string json_schema_to_gbnf(const json::Value& schema);

// The grammar of any JSON object (response_format json_object).
std::string json_object_gbnf();

class SchemaCompiler {
 public:
  SchemaCompiler();
  ~SchemaCompiler();
  // The name of a rule for the JSON texts `schema` accepts ($refs resolved within it),
  // its rules added to this compiler's grammar.
  std::string compile(const json::Value& schema, const std::string& name);
  // Every rule added so far, plus the shared ones (value, string, ws ...).
  std::string rules() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::grammar
