// OpenAI's Responses API (POST /v1/responses, what Codex CLI speaks) mapped onto the one
// chat path: the request becomes a chat completions body, and the chat reply is written
// as a response object or its event stream. Stateless, like ollama's and llama-server's:
// previous_response_id gets a 400, and nothing is stored.
//
// Request: input (a string, or items: messages with input_text/output_text parts,
// function_call, function_call_output; reasoning items are skipped), instructions (the
// system message), flat function tools, tool_choice, parallel_tool_calls,
// max_output_tokens, temperature, top_p, reasoning.effort, text.format "text", stream.
// Streamed events, each with its sequence_number: response.created, response.in_progress,
// then per output item response.output_item.added, its content's events
// (content_part.added, output_text.delta/.done, content_part.done;
// reasoning_text.delta/.done; function_call_arguments.delta/.done),
// response.output_item.done, and last response.completed (response.incomplete when the
// output was cut by max_output_tokens).
#pragma once
#include <memory>
#include <string>

#include "server/reply_writer.h"
#include "util/json.h"

namespace ember::server {

// Throws ApiError (400) naming the field.
json::Value chat_body_from_responses(const json::Value& body);

struct ResponsesEcho {  // request fields the response object repeats
  std::string model;
  json::Value request;  // the Responses body
};
std::unique_ptr<ReplyWriter> responses_writer(const ResponsesEcho& echo);

}  // namespace ember::server
