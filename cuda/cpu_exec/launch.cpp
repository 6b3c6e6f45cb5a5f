#include "cuda/cpu_exec/launch.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "util/error.h"

namespace ember::cpu_exec {

namespace {

thread_local Schedule tl_schedule;

// The GPU's limits (sm_90: 227 KiB of shared memory per block with the opt-in attribute).
constexpr uint64_t kMaxThreads = 1024;
constexpr size_t kMaxSharedBytes = size_t{227} << 10;

void check_config(const LaunchGrid& g, dim3 block, size_t shared_bytes) {
  const dim3 grid = g.grid;
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const bool ok = grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.x <= 0x7fffffffu && grid.y <= 65535 &&
                  grid.z <= 65535 && threads >= 1 && threads <= kMaxThreads && block.x <= 1024 && block.y <= 1024 &&
                  block.z <= 64 && shared_bytes <= kMaxSharedBytes;
  if (!ok)
    fail(ErrorKind::InvalidArgument,
         "cpu_exec: invalid launch configuration at {}: grid {}x{}x{}, block {}x{}x{}, {} bytes of shared memory",
         site_name(g.where), grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes);
}

// Block indices in launch order: x fastest, or a seeded permutation when shuffling.
std::vector<uint64_t> block_order(dim3 grid, std::mt19937_64& rng) {
  std::vector<uint64_t> order(uint64_t{grid.x} * grid.y * grid.z);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (tl_schedule.order == Order::Shuffled) std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

ScopedSchedule::ScopedSchedule(Schedule s) : saved_(tl_schedule) { tl_schedule = s; }
ScopedSchedule::~ScopedSchedule() { tl_schedule = saved_; }

void run_grid(const LaunchGrid& g, dim3 block, size_t shared_bytes, const std::function<void()>& thread_body) {
  check_config(g, block, shared_bytes);
  std::mt19937_64 rng(tl_schedule.seed);
  Block runner(block, tl_schedule.order, rng());
  std::vector<std::max_align_t> shared((shared_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  gridDim = g.grid;
  blockDim = block;
  dynamic_shared_base = reinterpret_cast<std::byte*>(shared.data());
  try {
    for (const uint64_t b : block_order(g.grid, rng)) {
      blockIdx = {static_cast<unsigned>(b % g.grid.x), static_cast<unsigned>(b / g.grid.x % g.grid.y),
                  static_cast<unsigned>(b / (uint64_t{g.grid.x} * g.grid.y))};
      if (!shared.empty()) std::memset(shared.data(), 0xff, shared.size() * sizeof(std::max_align_t));
      runner.run(thread_body);
    }
  } catch (const Error& e) {
    dynamic_shared_base = nullptr;
    throw Error(e.kind(), fmt::format("{} (kernel launched at {})", e.what(), site_name(g.where)));
  }
  dynamic_shared_base = nullptr;
}

}  // namespace ember::cpu_exec
