// Launching a kernel on the CPU: launch(grid, block, shared_bytes, kernel, args...) is
// kernel<<<grid, block, shared_bytes>>>(args...), synchronous. Blocks run one after another
// on the calling thread, each as a Block of fibers (block.h); every thread gets its own copy
// of the arguments, as on the GPU. The launch configuration is checked against the GPU's
// limits (Error InvalidArgument, like cudaErrorInvalidConfiguration), and a failing thread's
// Error gets the launch's source line appended.
//
// The schedule is the calling thread's, set for a scope with ScopedSchedule: RoundRobin
// (default) or Shuffled with a seed, which also shuffles the order of the blocks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include "cuda/cpu_exec/source_site.h"
#include <tuple>
#include <type_traits>

#include "cuda/cpu_exec/block.h"
#include "cuda/cpu_exec/builtins.h"

namespace ember::cpu_exec {

struct Schedule {
  Order order = Order::RoundRobin;
  uint64_t seed = 0;
};

class ScopedSchedule {
 public:
  explicit ScopedSchedule(Schedule s);
  ~ScopedSchedule();
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
  Schedule saved_;
};

// The grid, and where the launch is written (taken implicitly, for messages).
struct LaunchGrid {
  dim3 grid;
  SourceSite where;
  LaunchGrid(dim3 g, SourceSite w = SourceSite::current()) : grid(g), where(w) {}
  LaunchGrid(unsigned g, SourceSite w = SourceSite::current()) : grid(g), where(w) {}
};

// Runs thread_body on every thread of every block; dynamic shared memory (shared_bytes) is
// filled with 0xff bytes (NaN as floats) before each block, so reading it unwritten shows.
void run_grid(const LaunchGrid& grid, dim3 block, size_t shared_bytes, const std::function<void()>& thread_body);

template <class... P, class... A>
void launch(LaunchGrid grid, dim3 block, size_t shared_bytes, void (*kernel)(P...), A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: the kernel takes a different number of arguments");
  static_assert((!std::is_reference_v<P> && ...), "launch: kernel parameters are passed by value");
  const std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
  run_grid(grid, block, shared_bytes, [&] { std::apply(kernel, params); });
}

}  // namespace ember::cpu_exec
