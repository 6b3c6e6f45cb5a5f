// The one generation path of every API the server speaks: a request read into an
// ApiRequest is checked against the context, queued on the engine, and its text read
// into answer, reasoning and tool calls (template/reply_parser.h) as it arrives, then
// written by the API's ReplyWriter as one JSON body or a server-sent event stream. A
// streaming client that goes away is noticed at the next write (a token, or a comment
// line sent after kHeartbeat of silence) and its sequence is cancelled.
#pragma once
#include <httplib.h>

#include <memory>

#include "server/reply_writer.h"
#include "server/served_model.h"

namespace ember::server {

// POST /v1/completions and /v1/chat/completions.
void handle_completion(const ServedModel& model, Endpoint endpoint, const httplib::Request& req, httplib::Response& res);

// Runs `r` and answers with `writer` (whole, or streamed when r.stream).
void serve_generation(const ServedModel& model, const ApiRequest& r, std::unique_ptr<ReplyWriter> writer,
                      httplib::Response& res);

}  // namespace ember::server
