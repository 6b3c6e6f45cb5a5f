#include "engine/chat_fields.h"

#include <algorithm>

#include "util/error.h"

namespace ember {
namespace {

constexpr size_t kMaxTools = 128;

bool is_nonempty_string(const json::Value* v) { return v && v->is_string() && !json::as_string(*v).empty(); }

std::string function_name(const json::Value& tool, size_t i) {
  const json::Value* type = json::find(tool, "type");
  const json::Value* fn = json::find(tool, "function");
  if (!tool.is_object() || !type || !type->is_string() || json::as_string(*type) != "function" || !fn || !fn->is_object())
    fail(ErrorKind::InvalidArgument, "field 'tools': tools[{}] must be {{\"type\": \"function\", \"function\": {{...}}}}", i);
  const json::Value* name = json::find(*fn, "name");
  if (!is_nonempty_string(name)) fail(ErrorKind::InvalidArgument, "field 'tools': tools[{}].function.name must be a non-empty string", i);
  if (const json::Value* p = json::find(*fn, "parameters"); p && !p->is_null() && !p->is_object())
    fail(ErrorKind::InvalidArgument, "field 'tools': tools[{}].function.parameters must be a JSON schema object", i);
  if (const json::Value* d = json::find(*fn, "description"); d && !d->is_null() && !d->is_string())
    fail(ErrorKind::InvalidArgument, "field 'tools': tools[{}].function.description must be a string", i);
  return json::as_string(*name);
}

std::vector<std::string> read_tools(const json::Value& body, json::Value& out) {
  std::vector<std::string> names;
  const json::Value* tools = json::find(body, "tools");
  if (!tools || tools->is_null()) return names;
  if (!tools->is_array()) fail(ErrorKind::InvalidArgument, "field 'tools' must be an array of function tools");
  const auto& all = json::as_array(*tools);
  if (all.size() > kMaxTools) fail(ErrorKind::InvalidArgument, "field 'tools' has {} tools, at most {}", all.size(), kMaxTools);
  for (size_t i = 0; i < all.size(); ++i) names.push_back(function_name(all[i], i));
  if (!all.empty()) out = *tools;
  return names;
}

ToolChoice read_tool_choice(const json::Value* v, const std::vector<std::string>& tools) {
  ToolChoice c;
  if (!v || v->is_null()) return c;
  if (v->is_string()) {
    const std::string& s = json::as_string(*v);
    if (s == "auto") c.mode = ToolChoice::Mode::Auto;
    else if (s == "none") c.mode = ToolChoice::Mode::None;
    else if (s == "required") c.mode = ToolChoice::Mode::Required;
    else fail(ErrorKind::InvalidArgument, "field 'tool_choice' = '{}' must be auto, none, required or a named function", s);
  } else {
    const json::Value* fn = json::find(*v, "function");
    const json::Value* name = fn ? json::find(*fn, "name") : nullptr;
    if (!is_nonempty_string(name))
      fail(ErrorKind::InvalidArgument, "field 'tool_choice' must be a string or {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
    c.mode = ToolChoice::Mode::Named;
    c.name = json::as_string(*name);
    if (std::find(tools.begin(), tools.end(), c.name) == tools.end())
      fail(ErrorKind::InvalidArgument, "field 'tool_choice' names '{}', which is not one of the request's tools", c.name);
  }
  if (tools.empty() && (c.mode == ToolChoice::Mode::Required || c.mode == ToolChoice::Mode::Named))
    fail(ErrorKind::InvalidArgument, "field 'tool_choice' asks for a tool call, but the request has no 'tools'");
  return c;
}

json::Value read_template_kwargs(const json::Value& body) {
  json::Value kwargs = json::Value::object();
  if (const json::Value* v = json::find(body, "chat_template_kwargs"); v && !v->is_null()) {
    if (!v->is_object()) fail(ErrorKind::InvalidArgument, "field 'chat_template_kwargs' must be an object");
    kwargs = *v;
  }
  const json::Value* effort = json::find(body, "reasoning_effort");
  if (!effort || effort->is_null()) return kwargs;
  static const std::vector<std::string> kLevels{"none", "minimal", "low", "medium", "high"};
  if (!effort->is_string() || std::find(kLevels.begin(), kLevels.end(), json::as_string(*effort)) == kLevels.end())
    fail(ErrorKind::InvalidArgument, "field 'reasoning_effort' must be one of none, minimal, low, medium, high");
  const std::string& level = json::as_string(*effort);
  if (level == "none" && !kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = false;
  if (level != "none" && !kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = level;
  return kwargs;
}

void check_content(const json::Value& content, size_t i, bool null_ok) {
  if (content.is_string() || (null_ok && content.is_null())) return;
  if (!content.is_array())
    fail(ErrorKind::InvalidArgument, "messages[{}].content must be a string{} or an array of text parts", i, null_ok ? ", null" : "");
  for (const json::Value& part : json::as_array(content)) {
    const json::Value* type = json::find(part, "type");
    const json::Value* text = json::find(part, "text");
    if (!type || !type->is_string() || json::as_string(*type) != "text" || !text || !text->is_string())
      fail(ErrorKind::InvalidArgument, "messages[{}].content: only parts {{\"type\": \"text\", \"text\": ...}} are supported", i);
  }
}

void check_tool_calls(const json::Value& calls, size_t i) {
  if (!calls.is_array()) fail(ErrorKind::InvalidArgument, "messages[{}].tool_calls must be an array", i);
  for (size_t k = 0; k < json::as_array(calls).size(); ++k) {
    const json::Value& call = calls[k];
    const json::Value* fn = json::find(call, "function");
    const json::Value* name = fn ? json::find(*fn, "name") : nullptr;
    const json::Value* args = fn ? json::find(*fn, "arguments") : nullptr;
    const json::Value* id = json::find(call, "id");
    if (!call.is_object() || !is_nonempty_string(name) || !args || !args->is_string() || (id && !id->is_string()))
      fail(ErrorKind::InvalidArgument,
           "messages[{}].tool_calls[{}] must be {{\"id\", \"type\": \"function\", \"function\": {{\"name\", \"arguments\": a JSON string}}}}", i, k);
  }
}

}  // namespace

ChatFields read_chat_fields(const json::Value& body) {
  ChatFields f;
  const std::vector<std::string> names = read_tools(body, f.tools);
  f.tool_choice = read_tool_choice(json::find(body, "tool_choice"), names);
  if (const json::Value* v = json::find(body, "parallel_tool_calls"); v && !v->is_null()) {
    if (!v->is_boolean()) fail(ErrorKind::InvalidArgument, "field 'parallel_tool_calls' must be a boolean");
    f.parallel_tool_calls = json::as_bool(*v);
  }
  f.template_kwargs = read_template_kwargs(body);
  return f;
}

void check_chat_messages(const json::Value& messages) {
  const auto& all = json::as_array(messages, "messages");
  for (size_t i = 0; i < all.size(); ++i) {
    const json::Value& m = all[i];
    const json::Value* role = json::find(m, "role");
    if (!m.is_object() || !role || !role->is_string())
      fail(ErrorKind::InvalidArgument, "messages[{}] must be an object with a string 'role'", i);
    const std::string& r = json::as_string(*role);
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool")
      fail(ErrorKind::InvalidArgument, "messages[{}].role '{}' is not system, developer, user, assistant or tool", i, r);
    const json::Value* calls = json::find(m, "tool_calls");
    if (calls && !calls->is_null()) {
      if (r != "assistant") fail(ErrorKind::InvalidArgument, "messages[{}].tool_calls: only assistant messages make tool calls", i);
      check_tool_calls(*calls, i);
    }
    const json::Value* content = json::find(m, "content");
    const bool may_be_null = r == "assistant";
    if (!content) {
      if (!may_be_null) fail(ErrorKind::InvalidArgument, "messages[{}] ({}) needs a 'content'", i, r);
    } else {
      check_content(*content, i, may_be_null);
    }
    if (r == "tool" && !is_nonempty_string(json::find(m, "tool_call_id")))
      fail(ErrorKind::InvalidArgument, "messages[{}].tool_call_id must name the call this tool message answers", i);
    if (const json::Value* rc = json::find(m, "reasoning_content"); rc && !rc->is_null() && !rc->is_string())
      fail(ErrorKind::InvalidArgument, "messages[{}].reasoning_content must be a string", i);
  }
}

}  // namespace ember
