// API-key checks. The comparison takes the same time wherever the strings differ, so the
// key cannot be guessed byte by byte from response times.
#pragma once
#include <string_view>

namespace ember::server {

bool constant_time_equal(std::string_view a, std::string_view b);

// `authorization` is the Authorization header: "Bearer <key>".
bool bearer_matches(std::string_view authorization, std::string_view key);

}  // namespace ember::server
