// The packed AMX int8 matmul kernels, for prefill: they read the groups of 8 rows that the
// AVX2 packed kernels lay out at load (matmul_packed_avx2.h) and give bitwise the outputs of
// the AVX2 and AVX-512 VNNI kernels, so the engine may pick any of them for any step.
//
// AMX's tile multiply (tdpb*d) computes C[t][n] += sum_k A[t][k] * B[k/4][4n + k%4] over
// int8, in int32: A is 16 tokens x up to 64 activation bytes, loaded straight from the
// quantized activation rows, and B the weights in the "VNNI" layout, 4 bytes of a row per
// dword, which is exactly how a packed group stores its codes (dword r of a 32-byte load =
// row r's 4 codes). A 64-byte B row holds two groups (16 weight rows). Integer sums are exact
// in any order, so each kernel only needs its per-block integer dots from the tiles; the f32
// steps are then the AVX-512 kernel's, in its order, per token and 16-row pair.
//
// Tokens come 16 to a tile; the tokens of a range left over (fewer than 16: all of them in a
// decode step or a small batch) go to the AVX-512 kernel of the type, which gives the same
// bits. Call only after the check cpu_features().amx_int8 (which also asked Linux for the
// tile state); each call loads its tile configuration and releases the tiles before
// returning, so any pool thread may run any kernel.
#pragma once
#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu::amx {

// The kernel of a weight type, or nullptr when the type has no AMX kernel. group_rows,
// group_bytes, pack_group and act are the AVX2 kernel's.
const PackedKernel* packed_kernel(DType w);

#ifdef EMBER_AMX_KERNEL  // the kernel files: one tile function per weight format, for the table
void tile_q4_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q4_0_amx.cpp
void tile_q8_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q8_0_amx.cpp
void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q45_k_amx.cpp
void tile_q5_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q45_k_amx.cpp
void tile_q6_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1);  // matmul_packed_q6_k_amx.cpp
#endif

}  // namespace ember::cpu::amx
