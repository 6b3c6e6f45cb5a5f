// libFuzzer target for ember serve's request path (`make fuzz`): any body, read as a
// completions or a chat request (the first byte picks), must be accepted or refused with
// an ApiError -- never crash, hang or hit UB -- and an accepted one renders through the
// chat template and into its sequence request; an error renders as its JSON body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "fuzz_api_context.h"
#include "server/api_request.h"
#include "tokenizer/chat_template.h"

using ember_fuzz::api_context;
using ember_fuzz::g_sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto endpoint = data[0] & 1 ? ember::server::Endpoint::ChatCompletions : ember::server::Endpoint::Completions;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const ember::server::ApiRequest r = ember::server::read_api_request(body, endpoint, api_context());
    g_sink = r.completion.prompt.size() + r.completion.stop.size() + static_cast<size_t>(r.stream);
  } catch (const ember::server::ApiError& e) {
    g_sink = ember::server::error_body(e).size();
  }
  return 0;
}
