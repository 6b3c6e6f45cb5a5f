// MXFP4 weights (gpt-oss's experts) repacked in groups of 8 rows (built with AVX2 flags; see
// PackedKernel).
//
// Layout of a group of k elements (nb = k / 32 blocks; 8 * 17 bytes per block, exactly the
// 8 rows' original size):
//   nb x 8 B      the E8M0 exponents e of block b of rows 0..7, block after block
//   nb x 128 B    the codes: load q (32 B, q = 0..3) of block b holds, for row r = 0..7, bytes
//                 4q..4q+3 of that row's qs: low nibbles are elements 4q..4q+3, high nibbles
//                 elements 16+4q..16+4q+3 (as the Q4_0 packed kernel).
//
// One load gives the same eight elements of all 8 rows. pshufb looks the codes up in the
// doubled e2m1 table (kMxfp4Values: integers in [-12, 12]); maddubs needs one unsigned
// operand, so it gets |w| and the broadcast activations with w's signs. A pair sum is at most
// 2 * 12 * 127 = 3048, so the block's 8 maddubs results add in int16 (24384 at most) and one
// madd gives each row's exact integer dot S_r in one int32 lane. The 8 rows finish together:
//   y_r += (d_r * da) * S_r,   d_r = 2^(e_r - 128) (mxfp4_half_scale).
// A token's outputs go through the same operations whatever the tile, so one token alone
// gives bitwise what it gives inside a batch.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/mxfp4_scales_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows;                       // per block: one exponent per row
constexpr size_t kCodeBytes = kRows * QK_MXFP4 / 2;         // per block: 4 loads of 32 B
constexpr int kLoads = QK_MXFP4 / 8;                        // 8 elements of 8 rows per load

int64_t blocks(int64_t k) { return k / QK_MXFP4; }

size_t group_bytes(int64_t k) { return static_cast<size_t>(blocks(k)) * (kScaleBytes + kCodeBytes); }

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: codes 0 (value 0) whatever the scale
  const int64_t nb = blocks(k);
  uint8_t* codes = dst + nb * kScaleBytes;
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < n_rows; ++r) {
      const block_mxfp4& blk = reinterpret_cast<const block_mxfp4*>(w + r * w_stride)[b];
      dst[b * kScaleBytes + r] = blk.e;
      for (int q = 0; q < kLoads; ++q) std::memcpy(codes + b * kCodeBytes + 32 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Groups g, g + step, .. g + (G-1) step for tokens c .. c+RN-1 (r_end: the matrix's row
// count): neighbours (step 1) in prefill tiles, far apart for decode (for_each_group_pair).
template <int G, int RN>
[[gnu::noinline]] void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const int64_t nb = blocks(p.k);
  const uint8_t* scales[G];
  const uint8_t* codes[G];
  for (int i = 0; i < G; ++i) {
    scales[i] = p.w + (g + i * step) * p.w_stride;
    codes[i] = scales[i] + nb * kScaleBytes;
  }
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m256 acc[G][RN];
  for (int i = 0; i < G; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (RN == 1) {  // two streams per group: the exponents and the codes
      for (int i = 0; i < G; ++i) {
        prefetch_ahead(scales[i] + b * kScaleBytes, kScaleBytes);
        prefetch_ahead(codes[i] + b * kCodeBytes, kCodeBytes);
      }
    }
    __m256i s[G][RN];
    for (int q = 0; q < kLoads; ++q) {
      __m256i lo[G], hi[G];
      for (int i = 0; i < G; ++i) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[i] + b * kCodeBytes + 32 * q));
        lo[i] = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, nibble));
        hi[i] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble));
      }
      for (int j = 0; j < RN; ++j) {
        const __m256i a_lo = _mm256_set1_epi32(load_i32(a[j][b].qs + 4 * q));
        const __m256i a_hi = _mm256_set1_epi32(load_i32(a[j][b].qs + 16 + 4 * q));
        for (int i = 0; i < G; ++i) {
          const __m256i p_lo =
              _mm256_maddubs_epi16(_mm256_sign_epi8(lo[i], lo[i]), _mm256_sign_epi8(a_lo, lo[i]));
          const __m256i p_hi =
              _mm256_maddubs_epi16(_mm256_sign_epi8(hi[i], hi[i]), _mm256_sign_epi8(a_hi, hi[i]));
          s[i][j] = q == 0 ? p_lo : running_add_epi16(s[i][j], p_lo);
          s[i][j] = running_add_epi16(s[i][j], p_hi);
        }
      }
    }
    for (int i = 0; i < G; ++i) {
      const __m256 d = mxfp4_half_scales(scales[i] + b * kScaleBytes);
      for (int j = 0; j < RN; ++j) {
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(s[i][j], ones));
        acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[j][b].d)), dot, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < G; ++i) {
    const int64_t row0 = (g + i * step) * kRows;
    for (int j = 0; j < RN; ++j) store_group_rows(p.y + (c + j) * p.y_stride + row0, acc[i][j], r_end - row0);
  }
}

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  packed_group_walk<2, 4>(kRows, r0, r1, c0, c1, [&]<int G, int RN>(int64_t g, int64_t step, int64_t c) {
    micro<G, RN>(p, g, step, r1, c);
  });
}

}  // namespace

const PackedKernel kPackedMXFP4x8Avx2{kRows, group_bytes, pack_group, ActFormat::Q8S, tile};

}  // namespace ember::cpu
