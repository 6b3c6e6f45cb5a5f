// The CPU execution's warp collectives (cuda/cpu_exec/collectives.h): every shuffle against
// the CUDA Programming Guide's definition for every width and offset, on ints, halves and a
// 24-byte struct, half-warps shuffling at once, votes and __syncwarp; and the misuses that
// must fail: a lane missing from a collective, masks that disagree, a caller outside its
// mask, a source lane outside the mask, a bad width, lanes split between a shuffle and a
// barrier. Needs no CUDA: runs in every build.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cuda/cpu_exec/cuda_compat.h"
#include "cuda/cpu_exec/launch.h"
#include "util/error.h"

namespace {

using ember::cpu_exec::launch;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;

enum Op { Idx, Up, Down, Xor };

struct Wide {  // a value no register holds: shuffles copy it whole
  double d;
  int64_t i;
  int lane;
};

// The Programming Guide's words: idx reads lane srcLane % width of the caller's group; up
// and down return the caller's own value past the group's edge; xor may read an earlier
// group but not a later one.
int guide_source(Op op, int lane, int b, int width) {
  const int group = lane / width * width, in_group = lane % width;
  switch (op) {
    case Idx:
      return group + b % width;
    case Up:
      return in_group >= b ? lane - b : lane;
    case Down:
      return in_group + b < width ? lane + b : lane;
    case Xor:
      return (lane ^ b) / width > lane / width ? lane : lane ^ b;
  }
  return -1;
}

template <class T>
T shuffled(Op op, T v, int b, int width) {
  switch (op) {
    case Idx:
      return __shfl_sync(0xffffffffu, v, b, width);
    case Up:
      return __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(b), width);
    case Down:
      return __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(b), width);
    case Xor:
      return __shfl_xor_sync(0xffffffffu, v, b, width);
  }
  return v;
}

// Each lane records which lane's value it received, through three value types.
__global__ void shuffle_kernel(Op op, int b, int width, int* from_int, int* from_half, int* from_wide) {
  const int lane = static_cast<int>(threadIdx.x);
  from_int[lane] = shuffled(op, lane * 7 + 3, b, width) / 7;
  from_half[lane] = static_cast<int>(__half2float(shuffled(op, __float2half(lane * 0.5f), b, width)) * 2.0f);
  const Wide w = shuffled(op, Wide{lane * 0.25, -lane, lane}, b, width);
  from_wide[lane] = w.d == w.lane * 0.25 && w.i == -w.lane ? w.lane : -1;
}

// Two half-warps shuffle at once, each with its own mask.
__global__ void half_warps(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  out[lane] = __shfl_xor_sync(mask, lane, 3, 16);
}

__global__ void votes(unsigned* ballot, int* any, int* all) {
  const int lane = static_cast<int>(threadIdx.x);
  ballot[lane] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  any[lane] = __any_sync(0xffffffffu, lane == 17);
  all[lane] = __all_sync(0xffffffffu, lane != 17);
}

// __syncwarp orders shared-memory traffic within a warp: read the next lane's slot.
__global__ void warp_rotate(int* out) {
  __shared__ int s[32];
  const unsigned lane = threadIdx.x;
  s[lane] = static_cast<int>(lane) * 10;
  __syncwarp();
  out[lane] = s[(lane + 1) % 32];
}

__global__ void lanes_leave_shuffle(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void masks_disagree(int* out) {
  const unsigned mask = threadIdx.x < 16 ? 0xffffffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_xor_sync(mask, 1, 1);
}

__global__ void ops_disagree(int* out) {
  out[threadIdx.x] = threadIdx.x < 16 ? __shfl_xor_sync(0xffffffffu, 1, 1) : __shfl_down_sync(0xffffffffu, 1, 1);
}

__global__ void caller_outside_mask(int* out) { out[threadIdx.x] = __shfl_sync(0x1u, 1, 0); }

__global__ void source_outside_mask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, 1, 20);
}

__global__ void width_not_power_of_two(int* out) { out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1, 12); }

__global__ void shuffle_against_barrier(int* out) {
  if (threadIdx.x < 16) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
  } else {
    __syncthreads();
  }
}

__global__ void full_mask_in_partial_warp(int* out) { out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1); }

}  // namespace

TEST_CASE("cpu_exec: shuffles match their definitions for every width and offset") {
  std::vector<int> from_int(32), from_half(32), from_wide(32);
  for (Op op : {Idx, Up, Down, Xor}) {
    for (int width = 1; width <= 32; width *= 2) {
      for (int b = 0; b < (op == Idx ? 40 : 32); ++b) {
        CAPTURE(op);
        CAPTURE(width);
        CAPTURE(b);
        launch(1, 32, 0, shuffle_kernel, op, b, width, from_int.data(), from_half.data(), from_wide.data());
        for (int lane = 0; lane < 32; ++lane) {
          CAPTURE(lane);
          const int want = guide_source(op, lane, b, width);
          CHECK(from_int[lane] == want);
          CHECK(from_half[lane] == want);
          CHECK(from_wide[lane] == want);
        }
      }
    }
  }
}

TEST_CASE("cpu_exec: disjoint half-warps shuffle at once; votes; __syncwarp") {
  for (Order order : {Order::RoundRobin, Order::Shuffled}) {
    ScopedSchedule schedule({order, 5});
    std::vector<int> out(32), any(32), all(32);
    launch(1, 32, 0, half_warps, out.data());
    for (int lane = 0; lane < 32; ++lane) CHECK(out[lane] == (lane ^ 3));

    std::vector<unsigned> ballot(32);
    launch(1, 32, 0, votes, ballot.data(), any.data(), all.data());
    for (int lane = 0; lane < 32; ++lane) {
      CHECK(ballot[lane] == 0x49249249u);  // lanes 0, 3, 6, ... 30
      CHECK(any[lane] == 1);
      CHECK(all[lane] == 0);
    }
    launch(1, 32, 0, warp_rotate, out.data());
    for (int lane = 0; lane < 32; ++lane) CHECK(out[lane] == (lane + 1) % 32 * 10);
  }
}

TEST_CASE("cpu_exec: a warp collective some lane of its mask misses fails the launch") {
  std::vector<int> out(48);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, lanes_leave_shuffle, out.data()),
                       doctest::Contains("returns while lanes 0x0000ffff wait for it in __shfl_xor_sync at "
                                         "tests/test_cuda_cpu_exec_warp.cpp:"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, masks_disagree, out.data()),
                       doctest::Contains("calls __shfl_xor_sync(mask 0xffff0000, width 32) at "
                                         "tests/test_cuda_cpu_exec_warp.cpp:"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, ops_disagree, out.data()), doctest::Contains("(divergent warp collective)"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, caller_outside_mask, out.data()),
                       doctest::Contains("with mask 0x00000001, which leaves out its own lane 1"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, source_outside_mask, out.data()),
                       doctest::Contains("reading lane 20, which mask 0x0000ffff leaves out"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, width_not_power_of_two, out.data()),
                       doctest::Contains("with width 12, not a power of two"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, shuffle_against_barrier, out.data()),
                       doctest::Contains("while lanes 0x0000ffff wait for it in __shfl_xor_sync"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 48, 0, full_mask_in_partial_warp, out.data()),
                       doctest::Contains("but its warp has only lanes 0x0000ffff"), ember::Error);
}
