// The packed (load-time interleaved) AVX2 matmul kernels, one file per weight format, and
// the table that finds them (matmul_packed_avx2.cpp). Call only after the AVX2 check.
#pragma once
#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

extern const PackedKernel kPackedQ4_0x8Avx2;  // matmul_packed_q4_0_avx2.cpp

}  // namespace ember::cpu
