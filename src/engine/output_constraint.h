// The request fields that constrain a completion's output to a grammar, shared by batch
// and serve (completion_request.h):
//   response_format {"type": "text"}                                   no constraint
//   response_format {"type": "json_object"}                            any JSON object
//   response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}  (OpenAI)
//   response_format {"type": "json_schema", "schema": {...}}           (llama-server)
//   json_schema {...}                                                  (llama-server)
//   grammar "GBNF text"                                                (llama-server)
#pragma once
#include <memory>
#include <span>

#include "grammar/grammar.h"
#include "grammar/tool_call.h"
#include "util/json.h"

namespace ember {

// The compiled grammar the body asks for, or null. Throws Error(InvalidArgument) naming
// the field (an unsupported schema keyword, a GBNF syntax error with line and column ...).
std::shared_ptr<const grammar::Grammar> output_constraint(const json::Value& body);

// The grammar text for a JSON schema given on the command line or in a request (an object,
// or true/{} for any JSON object), compiled.
std::shared_ptr<const grammar::Grammar> json_schema_constraint(const json::Value& schema);

// A forced tool call (tool_choice "required": every tool; a named tool_choice: that one):
// the Hermes <tool_call>{"name": ..., "arguments": ...}</tool_call> format with each tool's
// parameter schema, one call or (parallel) several. Set it as CompletionRequest::grammar.
// Throws Error(InvalidArgument) "field 'tools': ..." naming an unsupported keyword.
std::shared_ptr<const grammar::Grammar> tool_call_constraint(std::span<const grammar::ToolSchema> tools, bool parallel);

}  // namespace ember
