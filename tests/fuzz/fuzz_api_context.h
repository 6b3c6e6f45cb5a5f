// The server context the HTTP request fuzz targets read bodies against: a chatml template
// whose replies may hold Hermes tool calls and <think> reasoning.
#pragma once
#include <cstddef>

#include "server/api_request.h"
#include "tokenizer/chat_template.h"

namespace ember_fuzz {

// Written by the targets so the optimiser keeps the work it checks.
inline volatile size_t g_sink;

inline const ember::server::ApiContext& api_context() {
  static const ember::ChatTemplate tmpl = ember::ChatTemplate::by_name("chatml");
  static const ember::server::ApiContext ctx = [] {
    ember::server::ApiContext c;
    c.model_name = "fuzz-model";
    c.chat = ember::ChatSetup{&tmpl, ember::reply_format_for("<tool_call> <think>")};
    return c;
  }();
  return ctx;
}

}  // namespace ember_fuzz
