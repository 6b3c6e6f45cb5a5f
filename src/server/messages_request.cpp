#include <fmt/format.h>

#include "server/api_error.h"
#include "server/messages_api.h"

namespace ember::server {
namespace {

using json::Value;

const Value* field(const Value& v, const char* key) {
  const Value* f = json::find(v, key);
  return f && !f->is_null() ? f : nullptr;
}

std::string block_type(const Value& block, const std::string& where) {
  const Value* t = field(block, "type");
  if (!block.is_object() || !t || !t->is_string()) throw bad_request(fmt::format("field 'messages': {} must be a block with a 'type'", where));
  return json::as_string(*t);
}

std::string string_of(const Value& block, const char* key, const std::string& where) {
  const Value* v = field(block, key);
  if (!v || !v->is_string()) throw bad_request(fmt::format("field 'messages': {}.{} must be a string", where, key));
  return json::as_string(*v);
}

// Text blocks (or a string) joined; `field_name` names the request field in errors.
std::string text_of(const Value& content, const std::string& where, const char* field_name) {
  if (content.is_string()) return json::as_string(content);
  if (!content.is_array()) throw bad_request(fmt::format("field '{}': {} must be a string or an array of text blocks", field_name, where));
  std::string text;
  for (const Value& b : json::as_array(content)) {
    const Value* t = field(b, "type");
    const Value* s = field(b, "text");
    if (!t || !t->is_string() || json::as_string(*t) != "text" || !s || !s->is_string())
      throw bad_request(fmt::format("field '{}': {}: only text blocks are supported here", field_name, where));
    text += json::as_string(*s);
  }
  return text;
}

void add_user(Value& messages, const Value& content, const std::string& where) {
  if (content.is_string()) {
    messages.push_back(Value{{"role", "user"}, {"content", content}});
    return;
  }
  if (!content.is_array()) throw bad_request(fmt::format("field 'messages': {}.content must be a string or an array of blocks", where));
  std::string text;
  for (size_t k = 0; k < json::as_array(content).size(); ++k) {
    const Value& b = content[k];
    const std::string at = fmt::format("{}.content[{}]", where, k);
    const std::string type = block_type(b, at);
    if (type == "text") {
      text += string_of(b, "text", at);
    } else if (type == "tool_result") {
      const Value* c = field(b, "content");
      messages.push_back(Value{{"role", "tool"}, {"tool_call_id", string_of(b, "tool_use_id", at)}, {"content", c ? text_of(*c, at, "messages") : ""}});
    } else {
      throw bad_request(fmt::format("field 'messages': {}.type '{}' is not supported in a user turn (text, tool_result)", at, type));
    }
  }
  if (!text.empty()) messages.push_back(Value{{"role", "user"}, {"content", text}});
}

void add_assistant(Value& messages, const Value& content, const std::string& where) {
  if (content.is_string()) {
    messages.push_back(Value{{"role", "assistant"}, {"content", content}});
    return;
  }
  if (!content.is_array()) throw bad_request(fmt::format("field 'messages': {}.content must be a string or an array of blocks", where));
  std::string text, thinking;
  Value calls = Value::array();
  for (size_t k = 0; k < json::as_array(content).size(); ++k) {
    const Value& b = content[k];
    const std::string at = fmt::format("{}.content[{}]", where, k);
    const std::string type = block_type(b, at);
    if (type == "text") {
      text += string_of(b, "text", at);
    } else if (type == "thinking") {
      thinking += string_of(b, "thinking", at);
    } else if (type == "tool_use") {
      const Value* input = field(b, "input");
      if (!input || !input->is_object()) throw bad_request(fmt::format("field 'messages': {}.input must be an object", at));
      calls.push_back(Value{{"id", string_of(b, "id", at)},
                            {"type", "function"},
                            {"function", Value{{"name", string_of(b, "name", at)}, {"arguments", input->dump()}}}});
    } else if (type != "redacted_thinking") {
      throw bad_request(fmt::format("field 'messages': {}.type '{}' is not supported in an assistant turn (text, thinking, tool_use)", at, type));
    }
  }
  Value m{{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? Value(nullptr) : Value(text)}};
  if (!thinking.empty()) m["reasoning_content"] = thinking;
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  messages.push_back(std::move(m));
}

Value messages_of(const Value& body) {
  Value messages = Value::array();
  if (const Value* system = field(body, "system")) messages.push_back(Value{{"role", "system"}, {"content", text_of(*system, "system", "system")}});
  const Value* all = field(body, "messages");
  if (!all || !all->is_array() || json::as_array(*all).empty()) throw bad_request("field 'messages' must be a non-empty array");
  for (size_t i = 0; i < json::as_array(*all).size(); ++i) {
    const Value& m = (*all)[i];
    const std::string where = fmt::format("messages[{}]", i);
    const Value* role = field(m, "role");
    const Value* content = field(m, "content");
    if (!m.is_object() || !role || !role->is_string() || !content)
      throw bad_request(fmt::format("field 'messages': {} must be an object with a 'role' and a 'content'", where));
    if (json::as_string(*role) == "user") add_user(messages, *content, where);
    else if (json::as_string(*role) == "assistant") add_assistant(messages, *content, where);
    else throw bad_request(fmt::format("field 'messages': {}.role must be user or assistant (the system prompt is 'system')", where));
  }
  return messages;
}

Value tools_of(const Value& tools) {
  if (!tools.is_array()) throw bad_request("field 'tools' must be an array");
  Value out = Value::array();
  for (const Value& t : json::as_array(tools)) {
    const Value* type = field(t, "type");
    if (!t.is_object() || (type && (!type->is_string() || json::as_string(*type) != "custom")))
      throw bad_request("field 'tools': only client tools {\"name\", \"description\", \"input_schema\"} are supported");
    Value fn = Value::object();
    if (const Value* name = field(t, "name")) fn["name"] = *name;
    if (const Value* d = field(t, "description")) fn["description"] = *d;
    if (const Value* s = field(t, "input_schema")) fn["parameters"] = *s;
    out.push_back(Value{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

void copy_tool_choice(const Value& choice, Value& chat) {
  const Value* type = choice.is_object() ? field(choice, "type") : nullptr;
  const std::string t = type && type->is_string() ? json::as_string(*type) : "";
  if (t == "auto" || t == "none") chat["tool_choice"] = t;
  else if (t == "any") chat["tool_choice"] = "required";
  else if (t == "tool" && field(choice, "name")) chat["tool_choice"] = Value{{"type", "function"}, {"function", Value{{"name", *field(choice, "name")}}}};
  else throw bad_request("field 'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", \"name\": ...}");
  if (const Value* d = field(choice, "disable_parallel_tool_use"); d && d->is_boolean()) chat["parallel_tool_calls"] = !json::as_bool(*d);
}

void copy_settings(const Value& body, Value& chat, bool count_only) {
  const Value* max_tokens = field(body, "max_tokens");
  if (!max_tokens && !count_only) throw bad_request("field 'max_tokens' is required");
  if (max_tokens && !count_only) chat["max_tokens"] = *max_tokens;
  for (const char* key : {"temperature", "top_p", "top_k", "stream"})
    if (const Value* v = field(body, key); v && !count_only) chat[key] = *v;
  if (const Value* stops = field(body, "stop_sequences"); stops && !count_only) chat["stop"] = *stops;
  if (const Value* thinking = field(body, "thinking")) {
    const Value* type = thinking->is_object() ? field(*thinking, "type") : nullptr;
    const std::string t = type && type->is_string() ? json::as_string(*type) : "";
    if (t != "enabled" && t != "adaptive" && t != "between_tools" && t != "disabled")
      throw bad_request("field 'thinking' must be {\"type\": \"enabled\" | \"adaptive\" | \"between_tools\" | \"disabled\"}");
    chat["chat_template_kwargs"] = Value{{"enable_thinking", t != "disabled"}};
  }
}

}  // namespace

json::Value chat_body_from_messages(const json::Value& body, bool count_only) {
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  Value chat = Value::object();
  chat["messages"] = messages_of(body);
  if (const Value* tools = field(body, "tools")) {
    Value t = tools_of(*tools);
    if (!t.empty()) chat["tools"] = std::move(t);
  }
  if (const Value* choice = field(body, "tool_choice")) copy_tool_choice(*choice, chat);
  copy_settings(body, chat, count_only);
  return chat;
}

}  // namespace ember::server
