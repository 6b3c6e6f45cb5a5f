#include "server/agent_handlers.h"

#include "server/api_error.h"
#include "server/completion_handler.h"
#include "server/messages_api.h"
#include "server/responses_api.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::server {
namespace {

using Json = json::Value;

void send_json(httplib::Response& res, const Json& j) {
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

// A translated body run as a chat completions request.
ApiRequest chat_request(const ServedModel& model, const Json& chat_body) { return read_api_body(chat_body, Endpoint::ChatCompletions, model.api); }

std::string rendered(const ServedModel& model, const Json& chat_body) {
  try {
    return render_chat_request(chat_body, *model.api.chat.tmpl);
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
}

}  // namespace

void handle_responses(const ServedModel& model, const httplib::Request& req, httplib::Response& res) {
  const Json body = read_json_object(req.body);
  const ApiRequest r = chat_request(model, chat_body_from_responses(body));
  serve_generation(model, r, responses_writer(ResponsesEcho{model.api.model_name, body}), res);
}

void handle_messages(const ServedModel& model, const httplib::Request& req, httplib::Response& res) {
  try {
    const Json body = read_json_object(req.body);
    const ApiRequest r = chat_request(model, chat_body_from_messages(body));
    const Json* name = json::find(body, "model");
    serve_generation(model, r, messages_writer(name && name->is_string() ? json::as_string(*name) : model.api.model_name), res);
  } catch (const ApiError& e) {
    res.status = e.status;
    res.set_content(anthropic_error_body(e), "application/json");
  }
}

void handle_count_tokens(const ServedModel& model, const httplib::Request& req, httplib::Response& res) {
  try {
    const std::string prompt = rendered(model, chat_body_from_messages(read_json_object(req.body), /*count_only=*/true));
    send_json(res, Json{{"input_tokens", model.tokenizer->encode(prompt, true, true).size()}});
  } catch (const ApiError& e) {
    res.status = e.status;
    res.set_content(anthropic_error_body(e), "application/json");
  }
}

void handle_apply_template(const ServedModel& model, const httplib::Request& req, httplib::Response& res) {
  send_json(res, Json{{"prompt", rendered(model, read_json_object(req.body))}});
}

void handle_props(const ServedModel& model, httplib::Response& res) {
  const SamplingParams& s = model.api.defaults.sampling;
  const ReplyFormat& f = model.api.chat.reply;
  const Json params{{"n_predict", model.api.defaults.max_tokens}, {"temperature", s.temperature}, {"top_k", s.top_k},
                    {"top_p", s.top_p}, {"min_p", s.min_p}, {"repeat_penalty", s.repeat_penalty},
                    {"presence_penalty", s.presence_penalty}, {"frequency_penalty", s.frequency_penalty}};
  const bool tools = f.tools != ToolCallSyntax::None;
  const Tokenizer& tok = *model.tokenizer;
  send_json(res, Json{{"default_generation_settings", Json{{"n_ctx", model.engine->limits().n_ctx}, {"params", params}}},
                      {"total_slots", model.slots},
                      {"model_alias", model.api.model_name},
                      {"model_path", model.model_path},
                      {"chat_template", model.chat_template_text.empty() ? model.api.chat.tmpl->name() : model.chat_template_text},
                      {"chat_template_caps", Json{{"supports_tools", tools}, {"supports_tool_calls", tools},
                                                  {"supports_parallel_tool_calls", tools}, {"tool_call_syntax", syntax_name(f.tools)},
                                                  {"supports_thinking", f.think_tags || f.tools == ToolCallSyntax::Harmony}}},
                      {"modalities", Json{{"vision", false}, {"audio", false}}},
                      {"bos_token", tok.bos() >= 0 ? Json(std::string(tok.piece(tok.bos()))) : Json("")},
                      {"eos_token", tok.eos() >= 0 ? Json(std::string(tok.piece(tok.eos()))) : Json("")},
                      {"build_info", std::string("ember ") + EMBER_VERSION}});
}

}  // namespace ember::server
