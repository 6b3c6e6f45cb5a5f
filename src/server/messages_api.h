// Anthropic's Messages API (POST /v1/messages, what Claude Code speaks, and
// /v1/messages/count_tokens) mapped onto the one chat path: the request becomes a chat
// completions body, and the chat reply is written as a message or its event stream.
//
// Request: max_tokens (required), system (a string or text blocks), messages whose content
// is a string or blocks (text, tool_use, tool_result, thinking; a user turn's tool_result
// blocks become tool messages before its text), tools {name, description, input_schema},
// tool_choice {auto | any | tool (name) | none, disable_parallel_tool_use},
// stop_sequences, temperature, top_p, top_k, thinking {type enabled | adaptive |
// between_tools | disabled} (the template's enable_thinking), stream; other fields (cache_control,
// metadata, output_config ...) are ignored. `model` is echoed, not checked: Claude Code sends
// its own model names for its background tasks.
// Streamed events, each an "event:" line and its data: message_start, then per content
// block content_block_start, content_block_delta (text_delta, thinking_delta,
// input_json_delta), content_block_stop, then message_delta (stop_reason, usage) and
// message_stop; a ping follows message_start. stop_reason: end_turn, max_tokens, tool_use.
#pragma once
#include <memory>
#include <string>

#include "server/reply_writer.h"
#include "util/json.h"

namespace ember::server {

// Throws ApiError (400) naming the field. count_tokens bodies need no max_tokens.
json::Value chat_body_from_messages(const json::Value& body, bool count_only = false);

std::unique_ptr<ReplyWriter> messages_writer(const std::string& model);

// An error as Anthropic writes it: {"type": "error", "error": {"type", "message"}}.
std::string anthropic_error_body(const ApiError& e);

}  // namespace ember::server
