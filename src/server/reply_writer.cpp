#include "server/reply_writer.h"

#include <fmt/format.h>

#include <random>

namespace ember::server {

std::string random_id(std::string_view prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

}  // namespace ember::server
