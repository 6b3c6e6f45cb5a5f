// The packed (groups of 8 rows) kernel shared by Q4_K and Q5_K, whose super-blocks differ only
// in their codes: both have fp16 d and dmin and 12 bytes of 6-bit (scale, min) pairs for 8
// sub-blocks of 32 elements, x = d * sc_g * u - dmin * m_g with unsigned codes u.
// Included by matmul_packed_q4_k_avx2.cpp and matmul_packed_q5_k_avx2.cpp only.
//
// Layout of a group, per 256-element super-block b of the rows (kHeadBytes + Codes::kBytes):
//     0  8 x fp16  the rows' d
//    16  8 x fp16  the rows' dmin
//    32  3 x 32 B  the rows' 12 packed scale/min bytes as three 4-byte words:
//                  word w of row r at 32 + 32w + 4r (decoded in-kernel, 8 rows at once)
//   128  the codes, as the format's Codes policy lays them out: loads of 32 bytes that give
//        the same four elements of all 8 rows (row r in bytes 4r..4r+3, like Q4_0x8).
// maddubs multiplies such codes by the four activations broadcast (Q8_K, in [-127, 127]):
// int16 lane pairs, one pair per row, summed over Codes::kLoadsPerSum loads in int16 (the
// most that cannot overflow); one madd with the sub-block's scale of each row (an int16 in both
// halves of the row's dword) then gives each row's scaled dot in int32, and the 8 sub-blocks
// add up in int32 (at most 256 elements * 31 * 127 * 63 < 2^26). The mins term sum_g m_g * (bsum_2g +
// bsum_2g+1) is 4 more madds per token, of each row's (m_2t, m_2t+1) pairs with the token's
// broadcast bsum pair sums. The 8 rows finish in one f32 lane each, so nothing is reduced
// across lanes:  y_r += d_r * da * S_r - dmin_r * da * M_r.
// Every token goes through the same operations whatever the tile width, so one token alone
// gives bitwise the same outputs as in a batch.
//
// The scales stay packed (the group is exactly the 8 rows' bytes): pre-decoding them at pack
// time would add 32 bytes per super-block and group (2.8% more for Q4_K to read per token,
// and decode is memory-bound) to save about 14 of the ~250 vector ops of a one-token pass;
// measured, that made the in-cache one-token pass only 2-3% faster, no more than it adds.
//
// Everything here has internal linkage on purpose: each AVX2 file gets its own copy, so the
// linker can never pick an AVX2-compiled copy for code that runs before the CPU check.
#pragma once
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {
namespace {  // NOLINT(google-build-namespaces): see above

namespace q45 {

constexpr int kRows = 8;
constexpr size_t kHalfOff = 0, kMinHalfOff = 16, kScaleOff = 32, kHeadBytes = 128;

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// pshufb controls (constant tables, not vector statics: nothing AVX2 may run before the CPU
// check). Both act on registers whose dword r holds four bytes of row r (rows 0-3 in the low
// 128-bit lane, 4-7 in the high one), and make dword r two int16:
// scale[s]: (byte s, byte s): the row's scale of sub-block s of those four, twice.
// min_pair[t]: (byte 2t, byte 2t+1): the row's mins of sub-blocks 2t and 2t+1.
struct Shuffles {
  alignas(32) uint8_t scale[4][32];
  alignas(32) uint8_t min_pair[2][32];
};
constexpr Shuffles make_shuffles() {
  Shuffles t{};
  for (int i = 0; i < 32; ++i) {
    const int dword = (i / 4) % 4, pos = i % 4;  // in-lane dword and byte within it
    for (int s = 0; s < 4; ++s) t.scale[s][i] = pos % 2 ? 0x80 : static_cast<uint8_t>(4 * dword + s);
    for (int p = 0; p < 2; ++p) t.min_pair[p][i] = pos % 2 ? 0x80 : static_cast<uint8_t>(4 * dword + 2 * p + pos / 2);
  }
  return t;
}
constexpr Shuffles kShuf = make_shuffles();

// The 8 rows' 6-bit scales and mins of one super-block, as in get_scale_min_k4 but for all
// rows at once: dword r of sc03 holds row r's scales 0-3 as bytes, sc47 scales 4-7, and
// likewise m03/m47 the mins. Words a, b, c are the rows' scale bytes 0-3, 4-7, 8-11.
struct RowScales {
  __m256i sc03, sc47, m03, m47;
  RowScales() = default;
  explicit RowScales(const uint8_t* words) {
    const __m256i a = load256(words), b = load256(words + 32), c = load256(words + 64);
    const __m256i low6 = _mm256_set1_epi8(0x3f), low4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30);
    sc03 = _mm256_and_si256(a, low6);
    m03 = _mm256_and_si256(b, low6);
    sc47 = _mm256_or_si256(_mm256_and_si256(c, low4), _mm256_and_si256(_mm256_srli_epi32(a, 2), top2));
    m47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(c, 4), low4), _mm256_and_si256(_mm256_srli_epi32(b, 2), top2));
  }
  // Sub-block g's scale of row r in both int16 halves of dword r (madd's second operand).
  __m256i scale(int g) const { return _mm256_shuffle_epi8(g < 4 ? sc03 : sc47, load256(kShuf.scale[g % 4])); }
  // (m_2t, m_2t+1) of row r as the int16 pair of dword r.
  __m256i min_pair(int t) const { return _mm256_shuffle_epi8(t < 2 ? m03 : m47, load256(kShuf.min_pair[t % 2])); }
};

// sum_g m_{r,g} * (bsum_2g + bsum_2g+1) of one token, in dword r; mins[t] from min_pair(t).
inline __m256i mins_dot(const __m256i mins[4], const int16_t* bsums) {
  const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8)));
  const __m256i b = _mm256_broadcastsi128_si256(pairs);  // int16 lane g: bsum_2g + bsum_2g+1
  __m256i m = _mm256_madd_epi16(mins[0], _mm256_shuffle_epi32(b, 0x00));
  m = _mm256_add_epi32(m, _mm256_madd_epi16(mins[1], _mm256_shuffle_epi32(b, 0x55)));
  m = _mm256_add_epi32(m, _mm256_madd_epi16(mins[2], _mm256_shuffle_epi32(b, 0xAA)));
  return _mm256_add_epi32(m, _mm256_madd_epi16(mins[3], _mm256_shuffle_epi32(b, 0xFF)));
}

// A format's codes, as a policy class:
//   using Block = block_q4_K / block_q5_K;
//   static constexpr size_t kBytes;       // code bytes per super-block and group
//   static constexpr int kLoadsPerSum;    // loads whose maddubs sums fit int16 (divides 8)
//   static void pack(const Block& blk, int r, uint8_t* codes);  // row r's codes of one block,
//                                                               // into zeroed bytes
//   // The codes of load q (0..7: elements 4q..4q+3) of sub-blocks 2*pair and 2*pair+1.
//   static void unpack(const uint8_t* codes, int pair, int q, __m256i& lo, __m256i& hi);
template <class Codes>
struct Kernel {
  using Block = typename Codes::Block;
  static constexpr size_t kSuperBytes = kHeadBytes + Codes::kBytes;
  static_assert(kSuperBytes == kRows * sizeof(Block), "the group holds exactly the rows' bytes");

  static size_t group_bytes(int64_t k) { return static_cast<size_t>(k / QK_K) * kSuperBytes; }

  static void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
    std::memset(dst, 0, group_bytes(k));  // missing rows: d = dmin = 0, scales and codes 0
    for (int64_t b = 0; b < k / QK_K; ++b) {
      uint8_t* out = dst + b * kSuperBytes;
      for (int r = 0; r < n_rows; ++r) {
        const Block& blk = reinterpret_cast<const Block*>(w + r * w_stride)[b];
        std::memcpy(out + kHalfOff + 2 * r, &blk.d, 2);
        std::memcpy(out + kMinHalfOff + 2 * r, &blk.dmin, 2);
        for (int word = 0; word < 3; ++word) std::memcpy(out + kScaleOff + 32 * word + 4 * r, blk.scales + 4 * word, 4);
        Codes::pack(blk, r, out + kHeadBytes);
      }
    }
  }

  // Groups gs[0 .. S) for tokens c .. c+RN-1 (r_end: the matrix's row count, so a short
  // last group stores only its rows). S > 1 only for decode: far-apart groups read in
  // lockstep (for_each_group_pair), taking turns every Codes::kLoadsPerSum code loads. Turns
  // of a whole super-block or of a pair of sub-blocks gained nothing (Q4_K_M tg128, within
  // noise); these did (see tile()). Each group and token goes through the same operations
  // whatever S and RN.
  template <int RN, int S = 1, size_t kDistance = kPrefetchDistance>
  [[gnu::noinline]] static void micro(const MatmulArgs& p, const int64_t* gs, int64_t r_end, int64_t c) {
    const uint8_t* group[S];
    for (int i = 0; i < S; ++i) group[i] = p.w + gs[i] * p.w_stride;
    const block_q8_K* a[RN];
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8_K*>(p.a + (c + j) * p.a_stride);
    __m256 acc[S][RN];
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < p.k / QK_K; ++b) {
      const uint8_t* sb[S];
      __m256i isum[S][RN];
      for (int i = 0; i < S; ++i) {
        sb[i] = group[i] + b * kSuperBytes;
        for (int j = 0; j < RN; ++j) isum[i][j] = _mm256_setzero_si256();
      }
      RowScales scales[S];
      for (int i = 0; i < S; ++i) scales[i] = RowScales(sb[i] + kScaleOff);
      // A pair of sub-blocks shares its code bytes: each load feeds both.
      for (int pair = 0; pair < 4; ++pair) {
        __m256i sc_lo[S], sc_hi[S];
        for (int i = 0; i < S; ++i) {
          // Decode prefetch a quarter super-block at a time, not all 18-22 lines at its start:
          // ember bench tg128 Q4_K_M, 9 alternated rounds, median roofline share 85.7 -> 87.7%.
          if constexpr (RN == 1) prefetch_ahead(sb[i] + pair * (kSuperBytes / 4), kSuperBytes / 4, kDistance);
          sc_lo[i] = scales[i].scale(2 * pair);
          sc_hi[i] = scales[i].scale(2 * pair + 1);
        }
        for (int q0 = 0; q0 < 8; q0 += Codes::kLoadsPerSum)
          for (int i = 0; i < S; ++i) {
            __m256i lo[RN], hi[RN];
            for (int j = 0; j < RN; ++j) lo[j] = hi[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int q = q0; q < q0 + Codes::kLoadsPerSum; ++q) {
              __m256i ulo, uhi;
              Codes::unpack(sb[i] + kHeadBytes, pair, q, ulo, uhi);
              for (int j = 0; j < RN; ++j) {
                const int8_t* act = a[j][b].qs + 64 * pair + 4 * q;
                lo[j] = running_add_epi16(lo[j], _mm256_maddubs_epi16(ulo, _mm256_set1_epi32(load_i32(act))));
                hi[j] = running_add_epi16(hi[j], _mm256_maddubs_epi16(uhi, _mm256_set1_epi32(load_i32(act + 32))));
              }
            }
            for (int j = 0; j < RN; ++j)
              isum[i][j] = _mm256_add_epi32(
                  isum[i][j], _mm256_add_epi32(_mm256_madd_epi16(lo[j], sc_lo[i]), _mm256_madd_epi16(hi[j], sc_hi[i])));
          }
      }
      for (int i = 0; i < S; ++i) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[i] + kHalfOff)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[i] + kMinHalfOff)));
        const __m256i mins[4] = {scales[i].min_pair(0), scales[i].min_pair(1), scales[i].min_pair(2),
                                 scales[i].min_pair(3)};
        for (int j = 0; j < RN; ++j) {
          const __m256 da = _mm256_set1_ps(a[j][b].d);
          const __m256 m = _mm256_cvtepi32_ps(mins_dot(mins, a[j][b].bsums));
          acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(isum[i][j]), acc[i][j]);
          acc[i][j] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, da), m, acc[i][j]);
        }
      }
    }
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < RN; ++j)
        store_group_rows(p.y + (c + j) * p.y_stride + gs[i] * kRows, acc[i][j], r_end - gs[i] * kRows);
  }

  static void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    constexpr int RN = 4;  // 2..6 measured alike for Q4_K (noisy); 4 divides kTokenBlock
    if (c1 - c0 < RN) {
      // Two far-apart groups in lockstep: Q4_K_M tg128, tools/bench-ab against the
      // 1/2/4/8-stream reference, three sets of 4-5 alternated rounds: median roofline share
      // 72.2 -> 75.0%, 74.7 -> 81.6%, 74.1 -> 78.6%; t/s 32.0 -> 33.8, 32.1 -> 37.6, 30.2 -> 33.1.
      decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<1, 2>, micro<1>);
      return;
    }
    for_each_packed_tile<RN>(
        kRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { micro<RN>(p, &g, r1, c); },
        [&](int64_t g, int64_t c) { micro<1>(p, &g, r1, c); });
  }

  // The avx2-prefetch1k variant (kernel_choice.h): decode's pairs prefetch
  // kNearPrefetchDistance ahead; tiles of 4 tokens or more are tile()'s.
  static void tile_near_prefetch(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c1 - c0 >= 4) return tile(p, r0, r1, c0, c1);
    decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<1, 2, kNearPrefetchDistance>, micro<1, 1, kNearPrefetchDistance>);
  }

  static constexpr PackedKernel packed(TileFn walk = tile) { return {kRows, group_bytes, pack_group, ActFormat::Q8K, walk}; }
};

}  // namespace q45

}  // namespace
}  // namespace ember::cpu
