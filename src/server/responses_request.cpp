#include <fmt/format.h>

#include "server/api_error.h"
#include "server/responses_api.h"

namespace ember::server {
namespace {

using json::Value;

const Value* field(const Value& v, const char* key) {
  const Value* f = json::find(v, key);
  return f && !f->is_null() ? f : nullptr;
}

std::string string_field(const Value& v, const char* key, const std::string& where) {
  const Value* f = field(v, key);
  if (!f || !f->is_string()) throw bad_request(fmt::format("field '{}': {}.{} must be a string", "input", where, key));
  return json::as_string(*f);
}

// A message's content: a string, or parts of type input_text / output_text / text.
std::string content_text(const Value& content, const std::string& where) {
  if (content.is_string()) return json::as_string(content);
  if (!content.is_array()) throw bad_request(fmt::format("field 'input': {}.content must be a string or an array of parts", where));
  std::string text;
  for (const Value& part : json::as_array(content)) {
    const Value* type = field(part, "type");
    const std::string t = type && type->is_string() ? json::as_string(*type) : "";
    const Value* s = field(part, "text");
    if ((t != "input_text" && t != "output_text" && t != "text") || !s || !s->is_string())
      throw bad_request(fmt::format("field 'input': {}.content: only input_text and output_text parts are supported", where));
    text += json::as_string(*s);
  }
  return text;
}

// The assistant message that function_call items join (a new one unless the last message
// is an assistant's).
Value& assistant_for_calls(Value& messages) {
  if (messages.empty() || messages.back()["role"] != "assistant")
    messages.push_back(Value{{"role", "assistant"}, {"content", nullptr}});
  Value& m = messages.back();
  if (!m.contains("tool_calls")) m["tool_calls"] = Value::array();
  return m;
}

void add_item(Value& messages, const Value& item, size_t i) {
  const std::string where = fmt::format("input[{}]", i);
  if (!item.is_object()) throw bad_request(fmt::format("field 'input': {} must be an object", where));
  const Value* type = field(item, "type");
  const std::string t = type && type->is_string() ? json::as_string(*type) : "message";
  if (t == "message") {
    const std::string role = string_field(item, "role", where);
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
      throw bad_request(fmt::format("field 'input': {}.role '{}' is not user, assistant, system or developer", where, role));
    const Value* content = field(item, "content");
    if (!content) throw bad_request(fmt::format("field 'input': {} needs a 'content'", where));
    messages.push_back(Value{{"role", role}, {"content", content_text(*content, where)}});
  } else if (t == "function_call") {
    Value call{{"id", string_field(item, "call_id", where)},
               {"type", "function"},
               {"function", Value{{"name", string_field(item, "name", where)}, {"arguments", string_field(item, "arguments", where)}}}};
    assistant_for_calls(messages)["tool_calls"].push_back(std::move(call));
  } else if (t == "function_call_output") {
    const Value* output = field(item, "output");
    if (!output) throw bad_request(fmt::format("field 'input': {} needs an 'output'", where));
    messages.push_back(Value{{"role", "tool"}, {"tool_call_id", string_field(item, "call_id", where)}, {"content", content_text(*output, where)}});
  } else if (t != "reasoning") {  // reasoning items carry the model's earlier thoughts: not re-sent to it
    throw bad_request(fmt::format("field 'input': {}.type '{}' is not supported (message, function_call, function_call_output)", where, t));
  }
}

Value messages_of(const Value& body) {
  Value messages = Value::array();
  if (const Value* instructions = field(body, "instructions")) {
    if (!instructions->is_string()) throw bad_request("field 'instructions' must be a string");
    messages.push_back(Value{{"role", "system"}, {"content", *instructions}});
  }
  const Value* input = field(body, "input");
  if (!input) throw bad_request("field 'input' is required");
  if (input->is_string()) {
    messages.push_back(Value{{"role", "user"}, {"content", *input}});
  } else if (input->is_array()) {
    for (size_t i = 0; i < json::as_array(*input).size(); ++i) add_item(messages, (*input)[i], i);
  } else {
    throw bad_request("field 'input' must be a string or an array of items");
  }
  if (messages.empty()) throw bad_request("field 'input' holds no messages");
  return messages;
}

// Flat function tools {type, name, description, parameters} as chat tools.
Value tools_of(const Value& tools) {
  if (!tools.is_array()) throw bad_request("field 'tools' must be an array");
  Value out = Value::array();
  for (const Value& t : json::as_array(tools)) {
    const Value* type = field(t, "type");
    if (!type || !type->is_string() || json::as_string(*type) != "function")
      throw bad_request("field 'tools': only function tools ({\"type\": \"function\", \"name\", \"parameters\"}) are supported");
    Value fn = Value::object();
    for (const char* key : {"name", "description", "parameters", "strict"})
      if (const Value* v = field(t, key)) fn[key] = *v;
    out.push_back(Value{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

Value tool_choice_of(const Value& choice) {
  if (choice.is_string()) return choice;
  const Value* name = field(choice, "name");
  const Value* type = field(choice, "type");
  if (!type || !type->is_string() || json::as_string(*type) != "function" || !name)
    throw bad_request("field 'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}");
  return Value{{"type", "function"}, {"function", Value{{"name", *name}}}};
}

void copy_sampling(const Value& body, Value& chat) {
  for (const char* key : {"model", "temperature", "top_p", "stream", "parallel_tool_calls"})
    if (const Value* v = field(body, key)) chat[key] = *v;
  if (const Value* v = field(body, "max_output_tokens")) chat["max_tokens"] = *v;
  if (const Value* r = field(body, "reasoning")) {
    if (!r->is_object()) throw bad_request("field 'reasoning' must be an object");
    if (const Value* effort = field(*r, "effort")) chat["reasoning_effort"] = *effort;
  }
  if (const Value* text = field(body, "text")) {
    const Value* format = text->is_object() ? field(*text, "format") : nullptr;
    const Value* type = format ? field(*format, "type") : nullptr;
    if (format && (!type || !type->is_string() || json::as_string(*type) != "text"))
      throw bad_request("field 'text': only the format {\"type\": \"text\"} is supported");
  }
}

}  // namespace

json::Value chat_body_from_responses(const json::Value& body) {
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  if (field(body, "previous_response_id"))
    throw bad_request("field 'previous_response_id' is not supported: this server stores no responses; send the whole conversation in 'input'");
  if (field(body, "conversation")) throw bad_request("field 'conversation' is not supported: this server stores no conversations");
  Value chat = Value::object();
  chat["messages"] = messages_of(body);
  if (const Value* tools = field(body, "tools")) {
    Value t = tools_of(*tools);
    if (!t.empty()) chat["tools"] = std::move(t);
  }
  if (const Value* choice = field(body, "tool_choice")) chat["tool_choice"] = tool_choice_of(*choice);
  copy_sampling(body, chat);
  return chat;
}

}  // namespace ember::server
