// Stream capture for the CPU execution, CUDA graphs' semantics: between begin_capture(s) and
// end_capture(s), the work enqueued on stream s (launch_on below, and the host runtime's
// copies) is recorded instead of run, each launch with its arguments by value as a graph's
// kernel node keeps them; replaying the Graph runs the recorded work in order. So a graph
// that baked a pointer or a length which should have been device data shows up in the
// tests as a wrong result at replay, as it would on the GPU.
#pragma once
#include <functional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "cuda/cpu_exec/launch.h"

namespace ember::cpu_exec {

class Graph {
 public:
  void add(std::function<void()> node) { nodes_.push_back(std::move(node)); }
  void replay() const {
    for (const auto& node : nodes_) node();
  }
  size_t size() const { return nodes_.size(); }

 private:
  std::vector<std::function<void()>> nodes_;
};

// Throws InvalidArgument when s is already capturing (or, for end_capture, is not).
void begin_capture(const void* stream);
Graph end_capture(const void* stream);
Graph* capturing(const void* stream);  // the graph being recorded on s, or nullptr

// kernel<<<grid, block, shared_bytes, stream>>>(args...): run now, or recorded while the
// stream captures.
template <class... P, class... A>
void launch_on(const void* stream, LaunchGrid grid, dim3 block, size_t shared_bytes, void (*kernel)(P...),
               A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: the kernel takes a different number of arguments");
  static_assert((!std::is_reference_v<P> && ...), "launch: kernel parameters are passed by value");
  std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
  auto run = [grid, block, shared_bytes, kernel, params] {
    run_grid(grid, block, shared_bytes, [&] { std::apply(kernel, params); });
  };
  if (Graph* g = capturing(stream))
    g->add(std::move(run));
  else
    run();
}

}  // namespace ember::cpu_exec
