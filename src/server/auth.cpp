#include "server/auth.h"

#include <cstdint>

namespace ember::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited; a length difference counts as a mismatch.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff |= x ^ y;
  }
  // volatile keeps the compiler from turning the loop back into an early exit.
  volatile uint8_t result = diff;
  return result == 0;
}

bool bearer_matches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() < kScheme.size()) return false;  // the header's length is no secret
  const std::string_view scheme = authorization.substr(0, kScheme.size());
  const bool scheme_ok = scheme == kScheme || scheme == "bearer ";
  return constant_time_equal(authorization.substr(kScheme.size()), key) && scheme_ok;
}

}  // namespace ember::server
