// Packed Q5_K with AVX-512 VNNI: the groups of matmul_packed_q5_k_avx2.cpp (Q4_K's low four
// bits, then the fifth bits regrouped so that load 2j + q/4 holds, in byte 4r+k of row r,
// bits 2(q%4) and 2(q%4)+1: the fifth bits of element 4q+k of sub-blocks 2j and 2j+1), read by
// the kernel of packed_q45_k_avx512.h. Codes in [0, 31] sum in int32 there: no int16 bound.
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q45_k_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

void tile_q5_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  q45x16::Kernel<q45x16::Q5KCodes16>::tile(p, r0, r1, c0, c1);
}

}  // namespace ember::cpu::EMBER_AVX512_NS
