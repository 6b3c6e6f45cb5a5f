// The packed AVX-512 VNNI matmul kernels: the groups of 8 rows that the AVX2 packed kernels
// lay out at load (matmul_packed_avx2.h), read two groups at a time, one row per lane of a
// 512-bit register, with dpbusd for the integer dot products. Call only after the check
// cpu_features().avx512_vnni. The kernel files are built twice (see avx512_intrinsics.h):
// natively into ember_core (namespace avx512) and on SIMDe for test_matmul_avx512
// (namespace avx512_emulated).
#pragma once
#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

// The kernel of a weight type, or nullptr when the type has none at this level (it keeps the
// AVX2 packed kernel, which reads the same groups). group_rows, group_bytes and pack_group
// are the AVX2 kernel's: the packing does not depend on the level that reads it.
namespace avx512 {
const PackedKernel* packed_kernel(DType w);
}
namespace avx512_emulated {  // exists only in test_matmul_avx512 (SIMDe builds)
const PackedKernel* packed_kernel(DType w);
}

inline const PackedKernel* packed_kernel_avx512(DType w) { return avx512::packed_kernel(w); }

#ifdef EMBER_AVX512_NS  // the kernel files: one tile function per weight format, for the table
namespace EMBER_AVX512_NS {
void tile_q4_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q32_avx512.cpp
void tile_q5_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q32_avx512.cpp
void tile_q4_1(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q32_avx512.cpp
void tile_q5_1(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q32_avx512.cpp
void tile_q8_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q8_0_avx512.cpp
void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q4_k_avx512.cpp
void tile_q5_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q5_k_avx512.cpp
void tile_q6_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q6_k_avx512.cpp
void tile_mxfp4(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_mxfp4_avx512.cpp
}  // namespace EMBER_AVX512_NS
#endif

}  // namespace ember::cpu
