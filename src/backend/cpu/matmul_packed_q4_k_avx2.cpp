// Q4_K weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel and
// packed_q45_k_avx2.h for the group header, the arithmetic and the shared kernel).
//
// Codes of a super-block and group (1024 bytes after the 128-byte header):
//   32 x 32 B  load 8j+q (j = 0..3 a pair of sub-blocks, q = 0..7) holds, for row r = 0..7,
//              bytes 32j+4q .. 32j+4q+3 of that row's qs: low nibbles are elements
//              64j+4q..+3 (sub-block 2j), high nibbles 64j+32+4q..+3 (sub-block 2j+1).
// So one load, a mask and a shift give four elements of two sub-blocks of all 8 rows. Codes
// are in [0, 15]: all 8 loads of a sub-block sum in int16 (8 * 2 * 15 * 127 = 30480).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_q45_k_avx2.h"

namespace ember::cpu {

namespace {

struct Q4KCodes {
  using Block = block_q4_K;
  static constexpr size_t kBytes = 32 * 32;
  static constexpr int kLoadsPerSum = 8;

  static void pack(const Block& blk, int r, uint8_t* codes) {
    for (int load = 0; load < 32; ++load)  // qs offset 32j + 4q = 4 * load
      std::memcpy(codes + 32 * load + 4 * r, blk.qs + 4 * load, 4);
  }

  static void unpack(const uint8_t* codes, int pair, int q, __m256i& lo, __m256i& hi) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i raw = q45::load256(codes + 256 * pair + 32 * q);
    lo = _mm256_and_si256(raw, nibble);
    hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
  }
};

}  // namespace

const PackedKernel kPackedQ4_Kx8Avx2 = q45::Kernel<Q4KCodes>::packed();
const PackedKernel kPackedQ4_Kx8Avx2NearPrefetch = q45::Kernel<Q4KCodes>::packed(q45::Kernel<Q4KCodes>::tile_near_prefetch);

}  // namespace ember::cpu
