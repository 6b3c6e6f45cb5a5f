// The CPU execution of CUDA kernels (cuda/cpu_exec/) on its own: the launch and its limits,
// barrier counting and the failures of barriers not every thread reaches, the shuffled
// schedule catching a deliberately racy kernel that round-robin order hides, static and
// dynamic shared memory, reductions, atomics and the integer and half intrinsics. The warp
// collectives are tested in test_cuda_cpu_exec_warp.cpp. Needs no CUDA: runs in every build.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/cpu_exec/cuda_compat.h"
#include "cuda/cpu_exec/capture.h"
#include "cuda/cpu_exec/launch.h"
#include "util/error.h"

namespace {

using ember::cpu_exec::launch;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;

const Order kOrders[] = {Order::RoundRobin, Order::Shuffled};

// The message of the ember::Error a launch throws ("" and a failed check when none).
template <class F>
std::string error_of(F&& run) {
  try {
    run();
  } catch (const ember::Error& e) {
    return e.what();
  }
  FAIL_CHECK("the launch did not fail");
  return "";
}

// Every (block, thread) pair writes its indices once: covers index arithmetic in 3-D.
__global__ void write_indices(uint4* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned slot = block * blockDim.x * blockDim.y * blockDim.z + thread;
  out[slot] = make_uint4(block, thread, out[slot].z + 1, 0);
}

// Each thread's copy of an argument is its own: changing it is invisible to the others.
__global__ void own_arguments(int value, int* out) {
  value += static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = value;
}

// Threads count themselves in shared memory between barriers; every one must see the total.
__global__ void count_arrivals(int* seen, int rounds) {
  __shared__ int arrived;
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0 && threadIdx.y == 0) arrived = 0;
    __syncthreads();
    atomicAdd(&arrived, 1);
    __syncthreads();
    const unsigned t = threadIdx.x + blockDim.x * threadIdx.y;
    seen[(blockIdx.x * rounds + r) * blockDim.x * blockDim.y + t] = arrived;
    __syncthreads();  // nobody resets `arrived` before everyone has read it
  }
}

__global__ void return_before_barrier(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void barrier_in_uneven_loop(int* out) {
  for (unsigned i = 0; i <= threadIdx.x % 2; ++i) __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void divergent_barriers(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

// The deliberate race: each thread publishes its value, then adds its left neighbour's,
// with the barrier between the two optional. Round-robin order runs thread t - 1 before
// thread t and so hides the race; the shuffled order exposes it.
__global__ void neighbour_sum(const int* in, int* out, bool with_barrier) {
  EMBER_DYNAMIC_SHARED(int, s);
  const int t = static_cast<int>(threadIdx.x);
  s[t] = in[t];
  if (with_barrier) __syncthreads();
  out[t] = t > 0 ? s[t - 1] + s[t] : s[t];
}

__global__ void read_unwritten_shared(unsigned* out) {
  EMBER_DYNAMIC_SHARED(unsigned, s);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
  __syncthreads();
  s[threadIdx.x] = threadIdx.x;  // a later block must not see this
}

__global__ void reverse_in_shared(const float* in, float* out, int n) {
  EMBER_DYNAMIC_SHARED(float, s);
  const float* row = in + blockIdx.x * n;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) s[i] = row[i];
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    out[blockIdx.x * n + i] = s[n - 1 - i];
}

// A shared-memory tree reduction per block, then one atomicAdd per block into the total.
__global__ void tree_sum(const int* in, int n, long long* block_sums, unsigned long long* total) {
  EMBER_DYNAMIC_SHARED(long long, s);
  const unsigned t = threadIdx.x;
  long long v = 0;
  for (unsigned i = blockIdx.x * blockDim.x + t; i < static_cast<unsigned>(n); i += gridDim.x * blockDim.x) v += in[i];
  s[t] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    block_sums[blockIdx.x] = s[0];
    atomicAdd(total, static_cast<unsigned long long>(s[0]));
  }
}

// The RMSNorm-style reduction: xor shuffles within warps, warp sums through shared memory.
__global__ void warp_shared_sum(const float* in, int n, float* total) {
  __shared__ float warp_sums[32];
  float v = 0.0f;
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x))
    v += in[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(o));
    if (threadIdx.x == 0) atomicAdd(total, v);
  }
}

// Tickets from atomicAdd's old values, a float maximum by atomicCAS, atomicMax and atomicExch.
__global__ void atomics(int* counter, int* tickets, const float* values, float* fmax, int* imax, int* last) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  tickets[i] = atomicAdd(counter, 1);
  int* bits = reinterpret_cast<int*>(fmax);
  int old = *bits;
  while (__int_as_float(old) < values[i]) {
    const int seen = atomicCAS(bits, old, __float_as_int(values[i]));
    if (seen == old) break;
    old = seen;
  }
  atomicMax(imax, static_cast<int>(values[i] * 1000.0f));
  atomicExch(last, static_cast<int>(i));
}

__global__ void traps() { __trap(); }

}  // namespace

TEST_CASE("cpu_exec: every thread of every block runs once, with its 3-D indices") {
  const dim3 grid(3, 2, 2), block(8, 4, 2);
  const unsigned n_blocks = 12, n_threads = 64;
  for (Order order : kOrders) {
    ScopedSchedule schedule({order, 7});
    std::vector<uint4> out(n_blocks * n_threads, uint4{0, 0, 0, 0});
    launch(grid, block, 0, write_indices, out.data());
    for (unsigned b = 0; b < n_blocks; ++b)
      for (unsigned t = 0; t < n_threads; ++t) {
        const uint4 v = out[b * n_threads + t];
        CHECK(v.x == b);
        CHECK(v.y == t);
        CHECK(v.z == 1);
      }
  }
}

TEST_CASE("cpu_exec: each thread gets its own copy of the arguments") {
  std::vector<int> out(40);
  launch(1, 40, 0, own_arguments, 100, out.data());
  for (int t = 0; t < 40; ++t) CHECK(out[static_cast<size_t>(t)] == 100 + t);
}

TEST_CASE("cpu_exec: a barrier releases threads only when all of the block have arrived") {
  const int rounds = 3;
  for (const dim3 block : {dim3(1), dim3(33), dim3(100), dim3(1024), dim3(16, 8)}) {
    for (Order order : kOrders) {
      CAPTURE(block.x);
      CAPTURE(block.y);
      ScopedSchedule schedule({order, 11});
      const unsigned n = block.x * block.y;
      std::vector<int> seen(size_t{2} * rounds * n, -1);
      launch(2, block, 0, count_arrivals, seen.data(), rounds);
      CHECK(std::all_of(seen.begin(), seen.end(), [&](int s) { return s == static_cast<int>(n); }));
    }
  }
}

TEST_CASE("cpu_exec: a barrier that not every thread reaches fails the launch") {
  std::vector<int> out(64);
  for (Order order : kOrders) {
    CAPTURE(static_cast<int>(order));
    ScopedSchedule schedule({order, 3});
    const std::string e = error_of([&] { launch(1, 64, 0, return_before_barrier, out.data()); });
    MESSAGE(e);
    CHECK(e.find("cpu_exec: block (0,0,0) thread") == 0);
    CHECK(e.find("(5,0,0) [warp 0 lane 5]") != std::string::npos);
    CHECK(e.find("__syncthreads at tests/test_cuda_cpu_exec.cpp:") != std::string::npos);
    CHECK(e.find("kernel launched at tests/test_cuda_cpu_exec.cpp:") != std::string::npos);
  }
  const std::string uneven = error_of([&] { launch(1, 64, 0, barrier_in_uneven_loop, out.data()); });
  CHECK(uneven.find("returned without reaching it") != std::string::npos);
  const std::string divergent = error_of([&] { launch(1, 64, 0, divergent_barriers, out.data()); });
  CHECK(divergent.find("(divergent barriers)") != std::string::npos);
}

TEST_CASE("cpu_exec: the shuffled order catches a missing barrier that round-robin hides") {
  const int n = 64;
  std::vector<int> in(n), want(n), got(n);
  std::iota(in.begin(), in.end(), 1);
  for (int t = 0; t < n; ++t) want[t] = t > 0 ? in[t - 1] + in[t] : in[t];
  const size_t shared = n * sizeof(int);
  launch(1, n, shared, neighbour_sum, in.data(), got.data(), false);
  CHECK(got == want);  // round-robin: thread t - 1 always ran first
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    ScopedSchedule schedule({Order::Shuffled, seed});
    launch(1, n, shared, neighbour_sum, in.data(), got.data(), false);
    CHECK(got != want);  // caught: some thread read its neighbour's slot unwritten
    if (seed == 1) {
      int wrong = 0;
      for (int t = 0; t < n; ++t) wrong += got[t] != want[t];
      MESSAGE("racy neighbour_sum, shuffled seed 1: " << wrong << " of " << n << " sums wrong");
    }
    launch(1, n, shared, neighbour_sum, in.data(), got.data(), true);
    CHECK(got == want);  // the barrier fixes it in every order
  }
}

TEST_CASE("cpu_exec: dynamic shared memory is poisoned before every block") {
  const unsigned blocks = 3, threads = 40;
  std::vector<unsigned> out(blocks * threads);
  launch(blocks, threads, threads * sizeof(unsigned), read_unwritten_shared, out.data());
  CHECK(std::all_of(out.begin(), out.end(), [](unsigned v) { return v == 0xffffffffu; }));

  const int rows = 3, n = 1000;  // more elements than threads: a strided loop
  std::vector<float> in(rows * n), rev(rows * n);
  std::iota(in.begin(), in.end(), 0.0f);
  launch(rows, 96, n * sizeof(float), reverse_in_shared, in.data(), rev.data(), n);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) CHECK(rev[r * n + i] == in[r * n + n - 1 - i]);
}

TEST_CASE("cpu_exec: reductions over blocks, shared memory and shuffles") {
  const int n = 100003;
  std::vector<int> ints(n);
  std::mt19937 rng(5);
  for (int& v : ints) v = static_cast<int>(rng() % 2001) - 1000;
  const long long want = std::accumulate(ints.begin(), ints.end(), 0LL);
  std::vector<float> floats(ints.begin(), ints.end());
  for (Order order : kOrders) {
    CAPTURE(static_cast<int>(order));
    ScopedSchedule schedule({order, 21});
    const unsigned blocks = 7, threads = 256;
    std::vector<long long> block_sums(blocks);
    unsigned long long total = 0;
    launch(blocks, threads, threads * sizeof(long long), tree_sum, ints.data(), n, block_sums.data(), &total);
    CHECK(static_cast<long long>(total) == want);
    CHECK(std::accumulate(block_sums.begin(), block_sums.end(), 0LL) == want);
    float ftotal = 0.0f;
    launch(5, 160, 0, warp_shared_sum, floats.data(), n, &ftotal);
    CHECK(ftotal == doctest::Approx(static_cast<double>(want)).epsilon(1e-5));
  }
}

TEST_CASE("cpu_exec: atomics return the old value and combine every thread's update") {
  const unsigned blocks = 5, threads = 96, n = blocks * threads;
  std::vector<float> values(n);
  std::mt19937 rng(9);
  for (float& v : values) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  for (Order order : kOrders) {
    ScopedSchedule schedule({order, 4});
    int counter = 0, imax = -1000000, last = -1;
    float fmax = -2.0f;
    std::vector<int> tickets(n, -1);
    launch(blocks, threads, 0, atomics, &counter, tickets.data(), values.data(), &fmax, &imax, &last);
    CHECK(counter == static_cast<int>(n));
    std::sort(tickets.begin(), tickets.end());
    for (unsigned i = 0; i < n; ++i) CHECK(tickets[i] == static_cast<int>(i));
    const float top = *std::max_element(values.begin(), values.end());
    CHECK(fmax == top);
    CHECK(imax == static_cast<int>(top * 1000.0f));
    CHECK(last >= 0);
  }
}

TEST_CASE("cpu_exec: the launch configuration is checked against the GPU's limits") {
  for (const dim3 block : {dim3(1025), dim3(0), dim3(32, 32, 2), dim3(1, 1, 65)})
    CHECK_THROWS_WITH_AS(launch(1, block, 0, traps), doctest::Contains("invalid launch configuration"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(dim3(1, 65536), 32, 0, traps), doctest::Contains("invalid launch"), ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, (size_t{227} << 10) + 1, traps), doctest::Contains("invalid launch"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(launch(1, 32, 0, traps), doctest::Contains("a kernel called __trap()"), ember::Error);
  CHECK_THROWS_WITH_AS(__syncthreads(), doctest::Contains("outside a kernel launch"), ember::Error);
}

TEST_CASE("cpu_exec: __dp4a, byte and bit intrinsics against their definitions") {
  std::mt19937 rng(17);
  for (int i = 0; i < 1000; ++i) {
    const unsigned a = rng(), b = rng(), c = rng();
    int want = static_cast<int>(c);
    unsigned uwant = c;
    for (int k = 0; k < 4; ++k) {
      const int8_t sa = static_cast<int8_t>((a >> (8 * k)) & 0xff), sb = static_cast<int8_t>((b >> (8 * k)) & 0xff);
      want += sa * sb;
      uwant += ((a >> (8 * k)) & 0xff) * ((b >> (8 * k)) & 0xff);
    }
    CHECK(__dp4a(static_cast<int>(a), static_cast<int>(b), static_cast<int>(c)) == want);
    CHECK(__dp4a(a, b, c) == uwant);
  }
  CHECK(__byte_perm(0x33221100u, 0x77665544u, 0x7531u) == 0x77553311u);
  CHECK(__byte_perm(0x33221100u, 0x77665544u, 0x3210u) == 0x33221100u);
  CHECK(__brev(1u) == 0x80000000u);
  CHECK(__popc(0xf0f0u) == 8);
  CHECK(__ffs(0) == 0);
  CHECK(__ffs(8) == 4);
  CHECK(__clz(1) == 31);
}

TEST_CASE("cpu_exec: half and bfloat16 conversions round to nearest even") {
  CHECK(__half2float(__float2half(1.5f)) == 1.5f);
  CHECK(__half2float(__float2half(65504.0f)) == 65504.0f);
  CHECK(__half_as_ushort(__float2half(1.0f + 1.0f / 2048)) == 0x3c00);  // a tie rounds to even
  CHECK(__half_as_ushort(__float2half(70000.0f)) == 0x7c00);            // overflow: inf
  CHECK(__bfloat162float(__float2bfloat16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(__bfloat16_as_ushort(__float2bfloat16(-2.0f)) == 0xc000);
  const float2 f = __half22float2(__floats2half2_rn(0.25f, -3.0f));
  CHECK(f.x == 0.25f);
  CHECK(f.y == -3.0f);
  CHECK(__half2float(__hadd(__float2half(1.0f), __float2half(0.5f))) == 1.5f);
}

TEST_CASE("cpu_exec: a capturing stream records launches with their arguments, a graph replays them") {
  using ember::cpu_exec::launch_on;
  int stream_token = 0, other_token = 0;
  const void* s = &stream_token;
  std::vector<int> out(2, 0);
  int value = 5;
  ember::cpu_exec::begin_capture(s);
  CHECK_THROWS_AS(ember::cpu_exec::begin_capture(s), ember::Error);
  launch_on(s, 1, 2, 0, own_arguments, value, out.data());  // recorded, not run
  launch_on(&other_token, 1, 1, 0, own_arguments, 1, out.data() + 1);  // another stream runs now
  CHECK(out == std::vector<int>{0, 1});
  const ember::cpu_exec::Graph g = ember::cpu_exec::end_capture(s);
  CHECK(ember::cpu_exec::capturing(s) == nullptr);
  CHECK_THROWS_AS(ember::cpu_exec::end_capture(s), ember::Error);
  REQUIRE(g.size() == 1);
  value = 9;  // the graph keeps the argument it was captured with, as a CUDA graph's node
  out.assign(2, 0);
  g.replay();
  CHECK(out == std::vector<int>{5, 6});  // own_arguments: each thread writes its copy + its index
  out.assign(2, 0);
  g.replay();
  CHECK(out == std::vector<int>{5, 6});
}
