// Q6_K weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel).
//
// A Q6_K element is x = d * sc_g * (u - 32) with a 6-bit code u, one int8 scale sc_g per
// 16 elements (sub-block g) and one fp16 d per 256 (super-block). The file keeps u as a
// low nibble (ql) and a 2-bit field (qh) in places that take about 17 operations to rejoin
// per 16 elements x 8 rows; this layout rejoins them in 11.
//
// Layout of a group, per super-block b of the rows (1680 bytes, as 8 plain blocks):
//   16 x 96 B  sub-block g (elements 16g .. 16g+15) as three 32-byte vectors X, Y, Z; in
//              each, bytes 4r..4r+3 belong to row r = 0..7, byte i of a row holds
//                X: u(16g+i)    | (u(16g+12+i) & 3) << 6
//                Y: u(16g+4+i)  | (u(16g+12+i) >> 2 & 3) << 6
//                Z: u(16g+8+i)  | (u(16g+12+i) >> 4) << 6
//              so X, Y, Z & 0x3F are the codes of elements 0..3, 4..7, 8..11 of the
//              sub-block, and their top bits put together (3 and, 3 shift, 2 or) those
//              of elements 12..15: four vectors of "4 elements x 8 rows" from 3 loads.
//    8 x 16 B  scale pairs: vector k holds int8 (sc_2k, sc_2k+1) of row r at bytes 2r, 2r+1
//    8 x 2 B   the rows' d (fp16)
//
// Arithmetic (u in [0, 63], activations a in [-127, 127], Q8_K): maddubs of a code vector
// by its 4 activations broadcast gives each row a lane pair of 2-product sums (<= 16002),
// two of which still fit int16; madd by the sub-block's scale (duplicated in both lanes of
// the row's pair) then gives one int32 per row. The bias is taken out once per super-block:
// sum_g sc_g * 32 * bsum_g by madd of the scale pairs (times 32: |sc| <= 128 keeps 4096 in
// int16) with the activation's bsum pairs. The super-block's exact integer dot
// S_r = sum_g sc_g * sum (u - 32) a  (every partial int32 sum below 16 * 128 * 16 * 63 * 127
// + 8 * 2 * 4096 * 2032 < 2^29) then finishes in f32 lanes:
//   y_r += (d_r * da) * S_r.
// Each output is that same sequence of operations whatever the tile, so one token alone
// gives bitwise the batch's result.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr int kSubBlocks = QK_K / 16;
constexpr size_t kSubBytes = 3 * 32;                              // X, Y, Z
constexpr size_t kScalesAt = kSubBlocks * kSubBytes;               // 1536
constexpr size_t kDAt = kScalesAt + kRows * kSubBlocks;            // 1664
constexpr size_t kSuperBytes = kDAt + kRows * sizeof(fp16_bits);   // 1680
static_assert(kSuperBytes == kRows * sizeof(block_q6_K), "the group is as large as its rows");

// Decode prefetch distance. A super-block's first read is its scale pairs, which lie at its
// end (kScalesAt): with the common 1 KiB, that line is asked for only at the third pair of
// sub-blocks, after the read that needs it, so every super-block starts on a DRAM miss
// (Q4_K and Q4_0 read their groups front to back and keep 1 KiB). 2 KiB prefetches the next
// super-block's scales three pairs before its start. ember bench tg128, tools/bench-ab,
// alternated rounds: an all-Q6_K TinyLlama-shaped model 86.5 -> 91.4-91.5% of the roofline
// (6 and 5 rounds; 1.5 KiB measured 91.6%, 3 KiB 86.2%), Q4_K_M 88.1 -> 90.0% (6 rounds).
// Prefetching the next scale line alone, at 1 KiB, measured 83.1%. (2 KiB is now also the
// common distance, kPrefetchDistance; this one was tuned on its own, so it stays a number.)
constexpr size_t kScaleLead = 2048;

size_t group_bytes(int64_t k) { return static_cast<size_t>(k / QK_K) * kSuperBytes; }

// The 16 codes u = q + 32 of sub-block g of a block, in element order. The sub-block lies in
// one run of 32 elements 128h + 32k + l (h = g / 8, k = g / 2 % 4, l from 16 (g % 2)), whose
// low nibbles sit in ql[64h + 32(k & 1) + l] (the high halves for k >= 2) and top two bits
// in qh[32h + l] at shift 2k (the layout quantize_q6_K writes). SIMD because packing runs
// at load over every Q6_K matrix (a scalar loop per element packed ~0.1 GB/s).
__m128i sub_block_codes(const block_q6_K& blk, int g) {
  const int h = g / 8, k = g / 2 % 4, l = 16 * (g % 2);
  const __m128i ql = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.ql + 64 * h + 32 * (k & 1) + l));
  const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qh + 32 * h + l));
  const __m128i lo = _mm_and_si128(_mm_srl_epi16(ql, _mm_cvtsi32_si128(4 * (k >> 1))), _mm_set1_epi8(0x0F));
  const __m128i hi = _mm_and_si128(_mm_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), _mm_set1_epi8(3));
  return _mm_or_si128(lo, _mm_slli_epi16(hi, 4));
}

inline void store4(uint8_t* dst, __m128i v) {
  const int32_t bytes = _mm_cvtsi128_si32(v);
  std::memcpy(dst, &bytes, 4);
}

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: d 0, scales 0, codes 0
  const __m128i two_bits = _mm_set1_epi8(3);
  for (int64_t b = 0; b < k / QK_K; ++b) {
    uint8_t* out = dst + b * kSuperBytes;
    for (int r = 0; r < n_rows; ++r) {
      const block_q6_K& blk = reinterpret_cast<const block_q6_K*>(w + r * w_stride)[b];
      for (int g = 0; g < kSubBlocks; ++g) {
        const __m128i u = sub_block_codes(blk, g);
        const __m128i top = _mm_srli_si128(u, 12);  // elements 12..15 in bytes 0..3
        // codes | (top >> shift & 3) << 6; masked to 2 bits first, nothing crosses bytes
        auto with_top = [&](__m128i codes, int shift) {
          const __m128i field = _mm_and_si128(_mm_srl_epi16(top, _mm_cvtsi32_si128(shift)), two_bits);
          return _mm_or_si128(codes, _mm_slli_epi16(field, 6));
        };
        uint8_t* sub = out + g * kSubBytes + 4 * r;
        store4(sub, with_top(u, 0));                          // X: elements 0..3
        store4(sub + 32, with_top(_mm_srli_si128(u, 4), 2));  // Y: elements 4..7
        store4(sub + 64, with_top(_mm_srli_si128(u, 8), 4));  // Z: elements 8..11
        out[kScalesAt + 16 * (g / 2) + 2 * r + g % 2] = static_cast<uint8_t>(blk.scales[g]);
      }
      std::memcpy(out + kDAt + 2 * r, &blk.d, 2);
    }
  }
}

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __m256i loadu(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The four code vectors of one sub-block (elements 0..3, 4..7, 8..11, 12..15 of 8 rows).
struct SubCodes {
  __m256i q[4];
  explicit SubCodes(const uint8_t* sub) {
    const __m256i low6 = _mm256_set1_epi8(0x3F), top2 = _mm256_set1_epi8(static_cast<char>(0xC0));
    const __m256i x = loadu(sub), y = loadu(sub + 32), z = loadu(sub + 64);
    q[0] = _mm256_and_si256(x, low6);
    q[1] = _mm256_and_si256(y, low6);
    q[2] = _mm256_and_si256(z, low6);
    // The top bits are masked before each 16-bit shift, so nothing crosses into a byte
    // from its neighbour: X's field ends in bits 0-1, Y's in 2-3, Z's in 4-5.
    __m256i t = _mm256_srli_epi16(_mm256_and_si256(x, top2), 2);
    t = _mm256_srli_epi16(_mm256_or_si256(t, _mm256_and_si256(y, top2)), 2);
    q[3] = _mm256_srli_epi16(_mm256_or_si256(t, _mm256_and_si256(z, top2)), 2);
  }
};

// pshufb controls giving, from the scale pairs (sc_2k, sc_2k+1) of each row as int16, a
// vector with sc_2k (kDup[0]) or sc_2k+1 (kDup[1]) in both int16 lanes of the row.
alignas(32) constexpr uint8_t kDup[2][32] = {
    {0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13},
    {2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15}};

// Groups gs[0 .. S) for tokens c .. c+RN-1 (r_end: the matrix's row count, so a short last
// group stores only its rows). S > 1 only for decode: far-apart groups read in lockstep
// (for_each_group_pair), taking turns every sub-block. Each group and token goes through
// the same operations whatever S and RN.
template <int RN, int S = 1>
[[gnu::noinline]] void micro(const MatmulArgs& p, const int64_t* gs, int64_t r_end, int64_t c) {
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
    for (int k = 0; k < kSubBlocks / 2; ++k) {
      __m256i pairs[S];
      for (int i = 0; i < S; ++i) {
        // Decode prefetch an eighth of the super-block per pair of sub-blocks, as Q4_K does
        // (tg128 Q4_K_M, 5 alternated rounds: median roofline share 85.0 -> 86.4%), but
        // kScaleLead further ahead: see there.
        if constexpr (RN == 1) prefetch_ahead(sb[i] + k * (kSuperBytes / 8), kSuperBytes / 8, kScaleLead);
        pairs[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[i] + kScalesAt + 16 * k)));
        // the bias: 32 * (sc_2k * bsum_2k + sc_2k+1 * bsum_2k+1) per row
        const __m256i pairs32 = _mm256_slli_epi16(pairs[i], 5);
        for (int j = 0; j < RN; ++j)
          isum[i][j] = _mm256_sub_epi32(
              isum[i][j], _mm256_madd_epi16(pairs32, _mm256_set1_epi32(load_i32(a[j][b].bsums + 2 * k))));
      }
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < S; ++i) {
          const int sub = 2 * k + h;
          const __m256i sc = _mm256_shuffle_epi8(pairs[i], loadu(kDup[h]));
          const SubCodes u(sb[i] + sub * kSubBytes);
          for (int j = 0; j < RN; ++j) {
            const int8_t* av = a[j][b].qs + 16 * sub;
            const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(u.q[0], _mm256_set1_epi32(load_i32(av))),
                                                 _mm256_maddubs_epi16(u.q[1], _mm256_set1_epi32(load_i32(av + 4))));
            const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(u.q[2], _mm256_set1_epi32(load_i32(av + 8))),
                                                 _mm256_maddubs_epi16(u.q[3], _mm256_set1_epi32(load_i32(av + 12))));
            isum[i][j] =
                _mm256_add_epi32(isum[i][j], _mm256_add_epi32(_mm256_madd_epi16(s01, sc), _mm256_madd_epi16(s23, sc)));
          }
        }
    }
    for (int i = 0; i < S; ++i) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb[i] + kDAt)));
      for (int j = 0; j < RN; ++j)
        acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[j][b].d)), _mm256_cvtepi32_ps(isum[i][j]), acc[i][j]);
    }
  }
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < RN; ++j)
      store_group_rows(p.y + (c + j) * p.y_stride + gs[i] * kRows, acc[i][j], r_end - gs[i] * kRows);
}

// Tiles of 8 tokens share each decoded sub-block most widely (measured ~10% faster than 4
// or 6 in prefill); the last tokens of a batch that are fewer than 8 (e.g. a speculative
// verification batch) go 4 and then 1 at a time instead of one by one.
void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  static_assert(kTokenBlock % 8 == 0, "every token block but the last is whole 8-token tiles");
  const int64_t c8 = c0 + (c1 - c0) / 8 * 8;
  if (c1 - c0 < 4) {
    // Q4_K_M tg128, tools/bench-ab against the 1/2/4/8-stream reference, two sets of 4
    // alternated rounds: median roofline share 79.2 -> 81.6%, 80.0 -> 82.5% (t/s within
    // noise); bench-ops Q6_K DRAM matvec, best segment, 3 alternated rounds: 18-24 -> 18-27 GB/s.
    decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<1, 2>, micro<1>);
    return;
  }
  auto eight = [&](int64_t g, int64_t c) { micro<8>(p, &g, r1, c); };
  auto four = [&](int64_t g, int64_t c) { micro<4>(p, &g, r1, c); };
  auto one = [&](int64_t g, int64_t c) { micro<1>(p, &g, r1, c); };
  if (c0 < c8) for_each_packed_tile<8>(kRows, r0, r1, c0, c8, eight, one);
  if (c8 < c1) for_each_packed_tile<4>(kRows, r0, r1, c8, c1, four, one);
}

}  // namespace

const PackedKernel kPackedQ6_Kx8Avx2{kRows, group_bytes, pack_group, ActFormat::Q8K, tile};

}  // namespace ember::cpu
