#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

std::string param_named_in(const std::string& message) {
  for (const char* lead : {"field '", "give exactly one of '"}) {
    const size_t at = message.find(lead);
    if (at == std::string::npos) continue;
    const size_t from = at + std::char_traits<char>::length(lead);
    const size_t to = message.find('\'', from);
    if (to != std::string::npos) return message.substr(from, to - from);
  }
  if (message.rfind("messages[", 0) == 0) return "messages";
  return {};
}

}  // namespace

ApiError bad_request(const std::string& message) {
  return ApiError(400, "invalid_request_error", message, param_named_in(message));
}

std::string error_body(const ApiError& e) {
  nlohmann::ordered_json j;
  j["error"] = {{"message", e.what()},
                {"type", e.type},
                {"param", e.param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.param)},
                {"code", e.code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.code)}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace ember::server
