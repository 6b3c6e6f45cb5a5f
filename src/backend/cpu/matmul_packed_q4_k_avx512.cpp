// Packed Q4_K with AVX-512 VNNI: the groups of matmul_packed_q4_k_avx2.cpp (load 8j+q of a
// super-block's codes: dword r holds 4 bytes of row r, low nibbles sub-block 2j, high
// nibbles 2j+1), read by the kernel of packed_q45_k_avx512.h.
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q45_k_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  q45x16::Kernel<q45x16::Q4KCodes16>::tile(p, r0, r1, c0, c1);
}

}  // namespace ember::cpu::EMBER_AVX512_NS
