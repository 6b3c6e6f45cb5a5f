// The walk shared by the packed kernels (PackedKernel in matmul_kernels.h): rows in whole
// groups, tokens in blocks of kTokenBlock, then tiles of one group x RN tokens.
// Included by the *_avx2.cpp and *_avx512.cpp kernel files only: the lambdas make every
// instantiation local to its file.
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

// Calls full(group, c) for RN tokens c .. c+RN-1 and one(group, c) for the tokens left
// over. Kernels find a short last group from the matrix's row count r1.
template <int RN, class Full, class One>
inline void for_each_packed_tile(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Full&& full,
                                 One&& one) {
  const int64_t g0 = r0 / group_rows, g1 = (r1 + group_rows - 1) / group_rows;
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    for (int64_t g = g0; g < g1; ++g) {
      int64_t c = cb;
      for (; c + RN <= ce; c += RN) full(g, c);
      for (; c < ce; ++c) one(g, c);
    }
  }
}

// Decode (fewer tokens than a tile; a one-token step above all) reads the two halves of its
// row range at once: groups(gs, 2, c) computes groups gs[0] and gs[1] in lockstep, block by
// block, for token c, and groups(gs, 1, c) the odd group left over.
// Measured on this project's Zen 3 VM (ember bench tg128, TinyLlama shape, 2 threads,
// alternated rounds, against the reference of that time, the faster of 1 and 2 read
// streams): Q4_0 36.3 -> 39.0 t/s, 86.6 -> 97.6% of the roofline; Q8_0 91.7 -> 101.8%.
// 3 or 4 parts did like 2 (S = 4 vs 2 again later: 43.5 vs 44.2 t/s). Two neighbouring
// groups in lockstep (streams one group apart) gained nothing (89.0 vs 89.0%): it is the
// distance between the streams that counts, as in the read that sets the roofline
// (util/membw.cpp). The K-quants gain only when the groups take turns often: every few code
// loads for Q4_K and Q5_K (packed_q45_k_avx2.h), every sub-block for Q6_K; turns per
// super-block or per pair of sub-blocks gained nothing (bench-ops and Q4_K_M tg128).
template <class Groups>
inline void for_each_group_pair(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Groups&& groups) {
  const int64_t g0 = r0 / group_rows, g1 = (r1 + group_rows - 1) / group_rows;
  const int64_t half = (g1 - g0) / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t gs[2] = {g0 + i, g0 + half + i};
    for (int64_t c = c0; c < c1; ++c) groups(gs, 2, c);
  }
  if ((g1 - g0) % 2 != 0) {
    const int64_t last = g1 - 1;
    for (int64_t c = c0; c < c1; ++c) groups(&last, 1, c);
  }
}

// The decode walk of the "avx2-4streams" variant (kernel_choice.h): the four quarters of
// the row range at once, groups(gs, 4, c) computing gs[0..3] in lockstep for token c; the
// groups left over (fewer than four) go by for_each_group_pair. The kernels read these four
// streams with no software prefetch (prefetch_ahead): the hardware prefetchers then keep
// enough lines in flight, where for two streams they did not. Measured on this project's
// Zen 3 VM (tools/bench-ab, ember bench tg64, TinyLlama shape, 2 threads, alternated
// rounds, median roofline share): Q8_0 85.8 -> 92.0% (8 rounds; 21.0 -> 23.7 t/s), Q4_0
// 89.0 -> 92.2% (6 rounds). Four streams with the prefetch gained nothing (Q8_0 84.2%), and
// for Q4_K_M four without it lost (88.0 -> 85.6%): the K-quants keep their pairs. Which walk
// a CPU runs is measured (kernel_calibration.h), not assumed.
template <class Groups>
inline void for_each_group_quad(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Groups&& groups) {
  const int64_t g0 = r0 / group_rows, g1 = (r1 + group_rows - 1) / group_rows;
  const int64_t quarter = (g1 - g0) / 4;
  for (int64_t i = 0; i < quarter; ++i) {
    const int64_t gs[4] = {g0 + i, g0 + quarter + i, g0 + 2 * quarter + i, g0 + 3 * quarter + i};
    for (int64_t c = c0; c < c1; ++c) groups(gs, 4, c);
  }
  for_each_group_pair(group_rows, (g0 + 4 * quarter) * group_rows, r1, c0, c1, groups);
}

// The decode walk of the kernels whose micro kernel takes an array of groups: pair for two
// groups in lockstep, one for the odd group left over.
using GroupsMicro = void (*)(const MatmulArgs& p, const int64_t* groups, int64_t r_end, int64_t c);
inline void decode_group_pairs(const MatmulArgs& p, int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                               GroupsMicro pair, GroupsMicro one) {
  for_each_group_pair(group_rows, r0, r1, c0, c1,
                      [&](const int64_t* gs, int n, int64_t c) { (n == 2 ? pair : one)(p, gs, r1, c); });
}

// Tiles of G consecutive groups x RN tokens, for kernels whose accumulators hold a group's
// rows in lanes (so a tile's width in groups is free to choose): tile(g, c) computes
// groups g .. g+G-1 for tokens c .. c+RN-1, single(g, c) one group left over (fewer than
// G) for the same RN tokens, and leftover(g0, g1, c) groups [g0, g1) for one token c of
// those left over (fewer than RN: a decode step is all leftover). A kernel finds a short
// last group from the matrix's row count r1.
template <int G, int RN, class Tile, class Single, class Leftover>
inline void for_each_group_tile(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Tile&& tile,
                                Single&& single, Leftover&& leftover) {
  const int64_t g0 = r0 / group_rows, g1 = (r1 + group_rows - 1) / group_rows;
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    const int64_t full_end = cb + (ce - cb) / RN * RN;
    int64_t g = g0;
    for (; g + G <= g1; g += G)
      for (int64_t c = cb; c < full_end; c += RN) tile(g, c);
    for (; g < g1; ++g)
      for (int64_t c = cb; c < full_end; c += RN) single(g, c);
    for (int64_t c = full_end; c < ce; ++c) leftover(g0, g1, c);
  }
}

// The decode walk of a kernel whose micro kernel is micro.template operator()<G, RN>(g, step,
// c): groups g, g + step, ... (G of them) for tokens c .. c+RN-1; here far-apart pairs
// (for_each_group_pair, G = 2, step = their distance) and an odd group left over, RN = 1.
template <class Micro>
inline void packed_group_decode_walk(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Micro&& micro) {
  for_each_group_pair(group_rows, r0, r1, c0, c1, [&](const int64_t* gs, int n, int64_t c) {
    n == 2 ? micro.template operator()<2, 1>(gs[0], gs[1] - gs[0], c) : micro.template operator()<1, 1>(gs[0], 1, c);
  });
}

// The whole walk of such a kernel: decode (fewer than RN tokens) by packed_group_decode_walk;
// larger steps take tiles of G neighbouring groups x RN tokens.
template <int G, int RN, class Micro>
inline void packed_group_walk(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Micro&& micro) {
  if (c1 - c0 < RN) return packed_group_decode_walk(group_rows, r0, r1, c0, c1, micro);
  for_each_group_tile<G, RN>(
      group_rows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { micro.template operator()<G, RN>(g, 1, c); },
      [&](int64_t g, int64_t c) { micro.template operator()<1, RN>(g, 1, c); },
      [&](int64_t g0, int64_t g1, int64_t c) {
        for (int64_t g = g0; g < g1; ++g) micro.template operator()<1, 1>(g, 1, c);
      });
}

// Software prefetch for the one-token (decode) paths, which read every weight byte once and
// are bound by memory. The hardware prefetchers alone keep too few lines in flight while the
// core also unpacks the codes. Measured on this project's Zen 3 VM (2 threads, ember bench
// tg128, roofline against a read of huge pages): Q4_0 decode ~76% of the roofline without,
// 85-95% with a distance of 1024 bytes; 512 to 4096 bytes all gain, within the machine's
// noise of one another. About one DRAM latency at one core's share of the bandwidth: on the
// Sapphire Rapids VM of issues 29 and 32 (2 cores, ~38 GB/s) 2048 bytes beat 1024, as that
// rule predicts (~110 ns at ~18 GB/s per core): a 600 MB matrix at 2 threads, AVX2, 1024 vs
// 2048 alternated in one process, Q4_0 33.4/34.0 -> 35.8/35.8 GB/s, Q4_K 34.9/34.6 ->
// 35.4/35.0; ember bench tg128, alternated rounds on a quiet machine: TinyLlama-shaped Q4_0
// 52.2/53.8 -> 56.0/55.5 t/s, OLMoE-shaped Q4_K_M 38.6/38.5 -> 38.9/39.2 t/s. On a loaded
// machine (per-token A/B in one process) 1536 and 3072 did worse than 2048, 4096 worse still.
constexpr size_t kPrefetchDistance = 2048;

// The decode distance of the "avx2-prefetch1k" variant (kernel_choice.h), for CPUs where the
// rule above gives less: on this project's Zen 3 VM (2 cores, 25-40 GB/s) 1 KiB read Q4_K
// faster than 2 KiB. ember bench-ops, 4096-wide matrices from DRAM, 2 threads, 3 alternated
// rounds: Q4_K 89-95% -> 93-100% of the read bandwidth; tools/bench-ab, TinyLlama-shaped
// Q4_K_M tg64: 85.3 -> 92.3% of the roofline (8 rounds, higher in all), 89.4 -> 91.4% (6).
// Q5_K, Q6_K and Q4_1 measured within noise of 2 KiB there. Which distance a CPU runs for a
// type is measured (kernel_calibration.h), not assumed.
constexpr size_t kNearPrefetchDistance = 1024;

// Prefetches the lines of [p, p + bytes) shifted `distance` ahead. Called once per block
// (or part of a block) of a stream, so consecutive calls cover the stream without gaps (a
// line may be asked for twice; past the end of the buffer a prefetch is dropped, never a
// fault).
static inline void prefetch_ahead(const uint8_t* p, size_t bytes, size_t distance = kPrefetchDistance) {
  const char* ahead = reinterpret_cast<const char*>(p) + distance;
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0);
}

// One step of a running int16 sum of maddubs products: a wrapping add (every caller's bound
// keeps the sums exact). Not vpaddsw, though it never saturates here either: on Zen 3 it
// competes with maddubs for two of the four vector pipes, where vpaddw takes any of them
// (measured: 1.0 against 1.5 maddubs + add pairs per cycle). The empty asm keeps
// the sum a running one: GCC otherwise reassociates the adds into a tree that keeps every
// product alive and spills them (~15% slower prefill). static, as below.
static inline __m256i running_add_epi16(__m256i sum, __m256i x) {
  sum = _mm256_add_epi16(sum, x);
  __asm__("" : "+x"(sum));
  return sum;
}

// The same for int32 sums, as the add instruction itself: with an empty asm after an
// intrinsic add GCC wrote each sum to a new register and copied it back (a vmovdqa per add).
static inline __m256i running_add_epi32(__m256i sum, __m256i x) {
  __asm__("vpaddd %1, %0, %0" : "+x"(sum) : "x"(x));
  return sum;
}

// Stores a group's outputs for one token, held one row per f32 lane: `rows_left` rows
// remain from the group's first (a short last group stores only those). static: each
// AVX2 file keeps its own copy, so none can be picked for code built without AVX2.
static inline void store_group_rows(float* y, __m256 rows, int64_t rows_left) {
  if (rows_left >= 8) {
    _mm256_storeu_ps(y, rows);
  } else {
    alignas(32) float out[8];
    _mm256_store_ps(out, rows);
    for (int64_t r = 0; r < rows_left; ++r) y[r] = out[r];
  }
}

}  // namespace ember::cpu
