// Python's json.dumps over template values (the tojson filter).
#pragma once
#include <string>

#include "template/jinja/interpreter.h"

namespace ember::jinja {

struct JsonOptions {
  bool ensure_ascii = false;
  bool indented = false;
  std::string indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// tojson's arguments (ensure_ascii, indent, separators, sort_keys), positional or by name.
JsonOptions json_options(const CallArgs& args);
// The JSON text; all of it counts as data when anything in v came from data.
Text to_json(const Value& v, const JsonOptions& options);

}  // namespace ember::jinja
