// A POST /v1/completions or /v1/chat/completions body read into what the engine runs:
// the shared OpenAI fields (engine/completion_request.h) plus what only HTTP has (stream,
// stream_options, model). Fields ember cannot honour are refused, not ignored, so a client
// never gets a silently different answer. Throws ApiError (400) naming the field.
#pragma once
#include <string>
#include <string_view>

#include "engine/completion_request.h"
#include "util/json.h"

namespace ember::server {

enum class Endpoint { Completions, ChatCompletions };

struct ApiRequest {
  CompletionRequest completion;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
};

struct ApiContext {
  std::string model_name;  // requests naming another model are refused
  CompletionDefaults defaults;
  ChatSetup chat;
};

ApiRequest read_api_request(std::string_view body, Endpoint endpoint, const ApiContext& context);
// The same for a body already parsed (the Responses and Messages APIs translate theirs
// into a chat completions body).
ApiRequest read_api_body(const json::Value& body, Endpoint endpoint, const ApiContext& context);

// The pieces every JSON endpoint shares: the body as an object (400 invalid_json with the
// byte offset, or 400 when it is not an object), and an optional boolean field.
json::Value read_json_object(std::string_view body);
bool bool_field(const json::Value& body, const char* field, bool fallback);

}  // namespace ember::server
