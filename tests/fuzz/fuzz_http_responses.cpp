// libFuzzer target for POST /v1/responses' request path (`make fuzz`): any body is
// translated into a chat completions body and read as one; it must be accepted or refused
// with an ApiError -- never crash, hang or hit UB -- and the translation's result must be
// a body the chat path reads without any other kind of error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "fuzz_api_context.h"
#include "server/api_request.h"
#include "server/responses_api.h"
#include "tokenizer/chat_template.h"

using ember_fuzz::api_context;
using ember_fuzz::g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const ember::json::Value chat = ember::server::chat_body_from_responses(ember::server::read_json_object(text));
    const ember::server::ApiRequest r = ember::server::read_api_body(chat, ember::server::Endpoint::ChatCompletions, api_context());
    g_sink = r.completion.prompt.size() + r.completion.reply.prefill.size();
  } catch (const ember::server::ApiError& e) {
    g_sink = ember::server::error_body(e).size();
  }
  return 0;
}
