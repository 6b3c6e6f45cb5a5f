// The endpoints agents and editors use besides OpenAI's chat: the Responses API, Anthropic's
// Messages API and its token count, and llama-server's /apply-template and /props. The
// first two are translated into a chat completions request and run on the same
// generation path (completion_handler.h).
#pragma once
#include <httplib.h>

#include "server/served_model.h"

namespace ember::server {

void handle_responses(const ServedModel& model, const httplib::Request& req, httplib::Response& res);
void handle_messages(const ServedModel& model, const httplib::Request& req, httplib::Response& res);
void handle_count_tokens(const ServedModel& model, const httplib::Request& req, httplib::Response& res);

// POST /apply-template {"messages", "tools"?, "chat_template_kwargs"?} -> {"prompt"}: the
// prompt the chat request would see (with the generation prompt).
void handle_apply_template(const ServedModel& model, const httplib::Request& req, httplib::Response& res);

// GET /props: llama-server's shape (default_generation_settings, total_slots, model_path,
// chat_template, chat_template_caps, modalities, bos_token, eos_token, build_info).
void handle_props(const ServedModel& model, httplib::Response& res);

}  // namespace ember::server
