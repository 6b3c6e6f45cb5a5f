// The scheduler of one thread block: every GPU thread of the block is a fiber on the
// calling OS thread, and control changes hands only where CUDA threads synchronise
// (__syncthreads and the warp collectives). Between two such points a thread runs alone, so
// the order in which the scheduler picks threads is the only interleaving there is:
// RoundRobin resumes them in index order, Shuffled in a seeded random order, which turns a
// missing barrier into a wrong result. Every synchronisation is checked the way the hardware
// requires it to be used; a misuse throws Error(Internal) naming the block, the thread, the
// call and its source line (a barrier some thread skips or returns before, barriers reached
// from different lines, a collective whose mask leaves out its caller, names a lane that
// returned or waits elsewhere, or disagrees with another lane's mask, op or width).
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include "cuda/cpu_exec/source_site.h"
#include <string>
#include <vector>

#include "cuda/cpu_exec/builtins.h"
#include "cuda/cpu_exec/fiber.h"

namespace ember::cpu_exec {

enum class Order { RoundRobin, Shuffled };

constexpr int kWarpLanes = 32;
constexpr size_t kLaneBytes = 32;  // the largest value one lane can pass through a collective

// One warp collective in progress: the op, the lanes taking part and what each deposited.
struct Exchange {
  const char* op = nullptr;
  uint32_t mask = 0;
  int width = 0;
  SourceSite where;
  uint32_t arrived = 0;
  int unread = 0;  // lanes yet to read the values, once all have arrived
  std::array<std::array<std::byte, kLaneBytes>, kWarpLanes> values{};
};

// "cuda/kernels/rms_norm.cuh:27": a call site as messages name it.
std::string site_name(const SourceSite& where);

class Block {
 public:
  Block(dim3 block_dim, Order order, uint64_t seed);
  ~Block();
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // Runs body() once per thread of the block (blockIdx, gridDim and blockDim set by the
  // caller) and returns when every thread has returned; rethrows a thread's exception.
  void run(const std::function<void()>& body);

  // The block whose fiber is running; throws when called outside a launch.
  static Block& current();

  // For the synchronisation functions, called from inside a fiber.
  void sync_threads(SourceSite where);
  // Deposits this lane's value (bytes <= kLaneBytes) and returns once every lane of mask
  // has; the values stay valid until the lane calls done_reading.
  const Exchange& exchange(const char* op, uint32_t mask, int width, const void* value, size_t bytes,
                           SourceSite where);
  void done_reading(const Exchange& ex);
  int lane() const { return current_ % kWarpLanes; }
  [[noreturn]] void fail_here(const std::string& what) const;

 private:
  enum class State { Ready, AtBarrier, InExchange, Exited };
  struct Thread {
    State state = State::Ready;
    SourceSite where;  // of the barrier or collective it waits at
    const char* op = nullptr;
  };

  static void fiber_main();
  void thread_exits();
  void make_ready(int thread);
  int pick_next();
  void wait();  // suspends the running fiber until make_ready() and the scheduler resume it
  void check_joinable(uint32_t mask, const char* op, SourceSite where) const;
  Exchange& open_exchange(const char* op, uint32_t mask, int width, SourceSite where);
  void close_exchange(int warp, Exchange& ex);
  std::string describe_waits() const;
  std::string thread_name(int thread) const;

  const int n_threads_;
  const Order order_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Fiber>>& fibers_;  // the calling OS thread's pool
  std::vector<Thread> threads_;
  std::deque<int> ready_;
  // The block owns every exchange, not the fibers: a failed launch drops its fibers
  // without unwinding them.
  std::vector<std::unique_ptr<Exchange>> exchanges_;  // open or not yet read by all
  std::vector<std::unique_ptr<Exchange>> spare_exchanges_;  // read by all, to reuse
  std::vector<std::vector<Exchange*>> open_;          // per warp
  std::vector<uint32_t> exited_lanes_, barrier_lanes_;  // per warp: lanes returned, lanes at __syncthreads
  int current_ = -1;
  int exited_ = 0;
  int barrier_arrived_ = 0;
  SourceSite barrier_site_;
  const std::function<void()>* body_ = nullptr;
  std::exception_ptr failure_;
  Context scheduler_;
};

}  // namespace ember::cpu_exec
