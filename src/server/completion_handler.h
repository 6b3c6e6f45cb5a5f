// POST /v1/completions and /v1/chat/completions: read the request, check it against the
// context, queue it on the engine, and answer with one JSON body or a server-sent event
// stream. A streaming client that goes away is noticed at the next write (a token, or a
// comment line sent after kHeartbeat of silence) and its sequence is cancelled.
#pragma once
#include <httplib.h>

#include "server/served_model.h"

namespace ember::server {

void handle_completion(const ServedModel& model, Endpoint endpoint, const httplib::Request& req, httplib::Response& res);

}  // namespace ember::server
