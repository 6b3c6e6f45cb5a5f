#include <fmt/format.h>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_choice_setup.h"
#include "util/thread_pool.h"
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
  // The packed kernels each regime would use at the default thread count (what is cached;
  // a bad EMBER_KERNEL_CHOICE is reported here rather than failing --version).
  std::string kernels;
  try {
    for (const std::string& line : cpu::cached_kernel_choice(ThreadPool::default_threads()).lines()) kernels += "\n" + line;
  } catch (const std::exception& e) {
    kernels = fmt::format("\nkernels: {}", e.what());
  }
  return fmt::format("ember {} ({} build)\nCPU: {}\nSIMD: {} (using {}){}\nCUDA: {}", EMBER_VERSION, EMBER_BUILD_TYPE,
                     cpu_brand_string(), cpu_features_string(), simd_level_name(simd_level()), kernels, cuda);
}

}  // namespace ember::cli
