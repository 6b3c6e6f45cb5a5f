// The server's OpenAPI document (src/server/openapi.json), compiled in by CMake so the
// binary serves exactly the file kept in the repository.
#pragma once
#include <string_view>

namespace ember::server {

std::string_view openapi_document();

}  // namespace ember::server
