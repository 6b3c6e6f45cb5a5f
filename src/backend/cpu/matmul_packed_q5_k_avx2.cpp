// Q5_K weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel and
// packed_q45_k_avx2.h for the group header, the arithmetic and the shared kernel).
//
// Codes of a super-block and group (1280 bytes after the 128-byte header):
//      0  32 x 32 B  the low four bits, as Q4_K's codes: load 8j+q (j = 0..3 a pair of
//                    sub-blocks, q = 0..7) holds, for row r, bytes 32j+4q .. +3 of its qs (low
//                    nibbles: elements 64j+4q..+3 of sub-block 2j, high nibbles: sub-block 2j+1)
//   1024  8 x 32 B   the fifth bits, regrouped at pack time: load 2j + q/4 holds, for row r,
//                    in byte 4r+k, bits 2(q%4) and 2(q%4)+1: the fifth bits of element 4q+k of
//                    sub-blocks 2j and 2j+1 (qh keeps bit g of all 8 sub-blocks in one byte).
// The regrouping makes the shift that brings a fifth bit to bit 4 depend only on q, which the
// unrolled loop knows, so every shift is an immediate: a code costs one shift, one mask and an
// or more than Q4_K's. Codes are in [0, 31], so maddubs sums stay in int16 over 4 loads only
// (4 * 2 * 31 * 127 = 31496): each sub-block takes two madds with its scales.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_q45_k_avx2.h"

namespace ember::cpu {

namespace {

struct Q5KCodes {
  using Block = block_q5_K;
  static constexpr size_t kLowBytes = 32 * 32;
  static constexpr size_t kBytes = kLowBytes + 8 * 32;
  static constexpr int kLoadsPerSum = 4;

  static void pack(const Block& blk, int r, uint8_t* codes) {
    for (int load = 0; load < 32; ++load)  // qs offset 32j + 4q = 4 * load
      std::memcpy(codes + 32 * load + 4 * r, blk.qs + 4 * load, 4);
    uint8_t* high = codes + kLowBytes;  // zeroed by pack_group; each row ORs its bits in
    for (int pair = 0; pair < 4; ++pair)
      for (int q = 0; q < 8; ++q)
        for (int k = 0; k < 4; ++k) {
          const int h = (blk.qh[4 * q + k] >> (2 * pair)) & 3;  // bits of sub-blocks 2j, 2j+1
          high[32 * (2 * pair + q / 4) + 4 * r + k] |= static_cast<uint8_t>(h << (2 * (q % 4)));
        }
  }

  // Shifts 16-bit lanes left by n (right when negative). Bit 4 of each byte then comes from
  // bit 4-n of the same byte for -3 <= n <= 4: bits crossing between the lane's bytes land elsewhere.
  static __m256i shift16(__m256i v, int n) { return n >= 0 ? _mm256_slli_epi16(v, n) : _mm256_srli_epi16(v, -n); }

  static void unpack(const uint8_t* codes, int pair, int q, __m256i& lo, __m256i& hi) {
    const __m256i nibble = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    const __m256i raw = q45::load256(codes + 256 * pair + 32 * q);
    const __m256i high = q45::load256(codes + kLowBytes + 32 * (2 * pair + q / 4));
    const int s = 2 * (q % 4);
    lo = _mm256_or_si256(_mm256_and_si256(raw, nibble), _mm256_and_si256(shift16(high, 4 - s), bit4));
    hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble), _mm256_and_si256(shift16(high, 3 - s), bit4));
  }
};

}  // namespace

const PackedKernel kPackedQ5_Kx8Avx2 = q45::Kernel<Q5KCodes>::packed();
const PackedKernel kPackedQ5_Kx8Avx2NearPrefetch = q45::Kernel<Q5KCodes>::packed(q45::Kernel<Q5KCodes>::tile_near_prefetch);

}  // namespace ember::cpu
