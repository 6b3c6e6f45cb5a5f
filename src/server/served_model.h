// What the server answers with once the model is loaded: shared by the HTTP front
// (http_server.h, which owns it) and the handlers it routes to (completion_handler.h), so
// that the handlers need not know the server.
#pragma once
#include <cstdint>

#include "server/api_request.h"
#include "server/serving_engine.h"

namespace ember::server {

struct ServedModel {
  ServingEngine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ApiContext api;
  int64_t created = 0;  // unix seconds, for /v1/models
};

}  // namespace ember::server
