// What the server answers with once the model is loaded: shared by the HTTP front
// (http_server.h, which owns it) and the handlers it routes to (completion_handler.h), so
// that the handlers need not know the server.
#pragma once
#include <cstdint>
#include <string>

#include "server/api_request.h"
#include "server/serving_engine.h"

namespace ember::server {

struct ServedModel {
  ServingEngine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ApiContext api;
  int64_t created = 0;  // unix seconds, for /v1/models
  // For /props.
  std::string model_path;
  std::string chat_template_text;  // the GGUF's tokenizer.chat_template ("" when it has none)
  int slots = 0;                   // sequences decoded together (-np)
};

}  // namespace ember::server
