// Q8_0 weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel).
//
// Layout of a group of k elements (nb = k / 32 blocks; 8 * 34 bytes per block, exactly the
// 8 rows' original size):
//   nb x 8 fp16   the scales d of block b of rows 0..7, block after block
//   nb x 256 B    the codes: load q (32 B, q = 0..7) of block b holds, for row r = 0..7,
//                 the row's int8 codes of elements 4q..4q+3.
// The scales come first so that every 32-byte code load is aligned (the groups start
// 64-byte aligned and nb * 16 is a multiple of 32 whenever k is a multiple of 64).
//
// One load gives the same four elements of all 8 rows, dotted with those four activations
// broadcast. Both operands are signed, and maddubs needs one unsigned: it gets |w| (shared
// by the tokens of a tile) and the activations with w's signs (one sign op per token).
// A pair sum reaches 2 * 128 * 127 = 32512 (w = -128 gives |w| = 128 as unsigned), so two
// maddubs results cannot be added in int16: each is widened by madd to one int32 per row
// first. The 8 loads of a block then hold each row's exact integer dot S_r in one lane, and
// the 8 rows finish together in f32 lanes with no horizontal sum:
//   y_r += (d_r * da) * S_r.
// A token's outputs go through the same f32 operations whatever the tile width, so one
// token alone gives bitwise what it gives inside a batch.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows * 2;             // per block
constexpr size_t kCodeBytes = kRows * QK8_0;          // per block: 8 loads of 32 B
constexpr int kLoads = QK8_0 / 4;                     // 4 elements of 8 rows per load

int64_t blocks(int64_t k) { return k / QK8_0; }

size_t group_bytes(int64_t k) { return static_cast<size_t>(blocks(k)) * (kScaleBytes + kCodeBytes); }

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: scale 0, codes 0
  const int64_t nb = blocks(k);
  uint8_t* codes = dst + nb * kScaleBytes;
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < n_rows; ++r) {
      const block_q8_0& blk = reinterpret_cast<const block_q8_0*>(w + r * w_stride)[b];
      std::memcpy(dst + b * kScaleBytes + 2 * r, &blk.d, 2);
      for (int q = 0; q < kLoads; ++q) std::memcpy(codes + b * kCodeBytes + 32 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Rows of group g (n_rows of them stored) for tokens c .. c+RN-1.
template <int RN>
void micro(const MatmulArgs& p, int64_t g, int n_rows, int64_t c) {
  const int64_t nb = blocks(p.k);
  const uint8_t* scales = p.w + g * p.w_stride;
  const uint8_t* codes = scales + nb * kScaleBytes;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m256 acc[RN];
  for (int j = 0; j < RN; ++j) acc[j] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = codes + b * kCodeBytes;
    __m256i dot[RN];
    for (int j = 0; j < RN; ++j) dot[j] = _mm256_setzero_si256();
    for (int q = 0; q < kLoads; ++q) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * q));
      const __m256i uw = _mm256_sign_epi8(w, w);
      for (int j = 0; j < RN; ++j) {
        const __m256i av = _mm256_set1_epi32(load_i32(a[j][b].qs + 4 * q));
        const __m256i pairs = _mm256_maddubs_epi16(uw, _mm256_sign_epi8(av, w));
        dot[j] = _mm256_add_epi32(dot[j], _mm256_madd_epi16(pairs, ones));
        // Keeps the sum a running one: left free, GCC reassociates the block's 8 * RN
        // products into an add tree and spills them to the stack (~5% slower prefill).
        __asm__("" : "+x"(dot[j]));
      }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * kScaleBytes)));
    for (int j = 0; j < RN; ++j)
      acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[j][b].d)), _mm256_cvtepi32_ps(dot[j]), acc[j]);
  }
  for (int j = 0; j < RN; ++j) {
    float* y = p.y + (c + j) * p.y_stride + g * kRows;
    if (n_rows == kRows) {
      _mm256_storeu_ps(y, acc[j]);
    } else {
      alignas(32) float out[kRows];
      _mm256_store_ps(out, acc[j]);
      for (int i = 0; i < n_rows; ++i) y[i] = out[i];
    }
  }
}

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;  // 6 and 8 measured the same, 2 and 3 slower
  for_each_packed_tile<RN>(
      kRows, r0, r1, c0, c1, [&](int64_t g, int n, int64_t c) { micro<RN>(p, g, n, c); },
      [&](int64_t g, int n, int64_t c) { micro<1>(p, g, n, c); });
}

}  // namespace

const PackedKernel kPackedQ8_0x8Avx2{kRows, group_bytes, pack_group, ActFormat::Q8S, tile};

}  // namespace ember::cpu
