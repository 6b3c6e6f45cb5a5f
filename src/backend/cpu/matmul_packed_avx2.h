// The packed (load-time interleaved) AVX2 matmul kernels, one file per weight format, and
// the table that finds them (matmul_packed_avx2.cpp). Call only after the AVX2 check.
#pragma once
#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

extern const PackedKernel kPackedQ4_0x8Avx2;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_0x8Avx2;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ4_1x8Avx2;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_1x8Avx2;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ4_Kx8Avx2;  // matmul_packed_q4_k_avx2.cpp
extern const PackedKernel kPackedQ5_Kx8Avx2;  // matmul_packed_q5_k_avx2.cpp
extern const PackedKernel kPackedQ6_Kx8Avx2;  // matmul_packed_q6_k_avx2.cpp
extern const PackedKernel kPackedQ8_0x8Avx2;  // matmul_packed_q8_0_avx2.cpp
extern const PackedKernel kPackedF16x8Avx2;   // matmul_packed_f16_avx2.cpp
extern const PackedKernel kPackedMXFP4x8Avx2; // matmul_packed_mxfp4_avx2.cpp

// The same kernels with the four-stream decode walk (packed_tiles.h, for_each_group_quad):
// the "avx2-4streams" variant of kernel_choice.h.
extern const PackedKernel kPackedQ4_0x8Avx2FourStreams;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_0x8Avx2FourStreams;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ4_1x8Avx2FourStreams;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_1x8Avx2FourStreams;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ8_0x8Avx2FourStreams;  // matmul_packed_q8_0_avx2.cpp

// The same kernels whose decode pairs prefetch kNearPrefetchDistance ahead (packed_tiles.h):
// the "avx2-prefetch1k" variant of kernel_choice.h.
extern const PackedKernel kPackedQ4_0x8Avx2NearPrefetch;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_0x8Avx2NearPrefetch;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ4_1x8Avx2NearPrefetch;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ5_1x8Avx2NearPrefetch;  // matmul_packed_q32_avx2.cpp
extern const PackedKernel kPackedQ8_0x8Avx2NearPrefetch;  // matmul_packed_q8_0_avx2.cpp
extern const PackedKernel kPackedQ4_Kx8Avx2NearPrefetch;  // matmul_packed_q4_k_avx2.cpp
extern const PackedKernel kPackedQ5_Kx8Avx2NearPrefetch;  // matmul_packed_q5_k_avx2.cpp

}  // namespace ember::cpu
