#include <fmt/format.h>

#include "backend/cpu/cpu_features.h"
#include "backend/cuda_api.h"
#include "cli/commands.h"

namespace ember::cli {

std::string version_string() {
  std::string cuda = "not built";
  if (cuda::built()) {
    int n = cuda::device_count();
    cuda = fmt::format("built, {} device{} found", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; ++i) cuda += fmt::format("\n  device {}: {}", i, cuda::device_description(i));
  }
  return fmt::format("ember {} ({} build)\nSIMD: {} (using {})\nCUDA: {}", EMBER_VERSION, EMBER_BUILD_TYPE,
                     cpu_features_string(), simd_level_name(simd_level()), cuda);
}

}  // namespace ember::cli
