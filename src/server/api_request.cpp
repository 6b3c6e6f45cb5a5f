#include "server/api_request.h"

#include "server/api_error.h"
#include "util/error.h"
#include "util/json.h"

namespace ember::server {
namespace {

// Fields that would change the answer in ways ember does not implement.
void refuse_unsupported(const json::Value& body) {
  for (const char* field : {"functions", "function_call", "suffix", "logit_bias", "best_of"}) {
    const json::Value* v = json::find(body, field);
    if (!v || v->is_null()) continue;
    const bool harmless = (v->is_array() && json::as_array(*v).empty()) || (v->is_object() && json::as_object(*v).empty()) ||
                          (std::string_view(field) == "best_of" && v->is_number_integer() && json::as_int(*v) == 1);
    if (!harmless) throw bad_request(fmt::format("field '{}' is not supported by ember", field));
  }
  if (bool_field(body, "echo", false)) throw bad_request("field 'echo' is not supported by ember");
}

void check_model(const json::Value& body, const std::string& served) {
  const json::Value* v = json::find(body, "model");
  if (!v || v->is_null()) return;
  if (!v->is_string()) throw bad_request("field 'model' must be a string");
  if (json::as_string(*v) != served)
    throw ApiError(404, "invalid_request_error", fmt::format("model '{}' does not exist; this server has '{}'", json::as_string(*v), served),
                   "model", "model_not_found");
}

void check_endpoint(const json::Value& body, Endpoint endpoint) {
  if (endpoint == Endpoint::ChatCompletions && !json::find(body, "messages"))
    throw bad_request("field 'messages' is required by /v1/chat/completions");
  if (endpoint == Endpoint::Completions && !json::find(body, "prompt"))
    throw bad_request("field 'prompt' is required by /v1/completions");
}

}  // namespace

json::Value read_json_object(std::string_view text) {
  json::Value body;
  try {
    body = json::parse(text, "request body");
  } catch (const Error& e) {
    throw ApiError(400, "invalid_request_error", e.what(), "", "invalid_json");
  }
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  return body;
}

bool bool_field(const json::Value& body, const char* field, bool fallback) {
  const json::Value* v = json::find(body, field);
  if (!v || v->is_null()) return fallback;
  if (!v->is_boolean()) throw bad_request(fmt::format("field '{}' must be a boolean", field));
  return json::as_bool(*v);
}

ApiRequest read_api_request(std::string_view text, Endpoint endpoint, const ApiContext& context) {
  return read_api_body(read_json_object(text), endpoint, context);
}

ApiRequest read_api_body(const json::Value& body, Endpoint endpoint, const ApiContext& context) {
  check_model(body, context.model_name);
  check_endpoint(body, endpoint);
  refuse_unsupported(body);
  ApiRequest r;
  r.stream = bool_field(body, "stream", false);
  if (const json::Value* so = json::find(body, "stream_options"); so && !so->is_null()) {
    if (!so->is_object()) throw bad_request("field 'stream_options' must be an object");
    r.include_usage = bool_field(*so, "include_usage", false);
  }
  try {
    r.completion = parse_completion_request(body, context.defaults, context.chat);
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
  return r;
}

}  // namespace ember::server
