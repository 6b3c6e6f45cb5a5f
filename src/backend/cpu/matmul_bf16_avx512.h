// The AVX-512 BF16 kernel for BF16 weights in the rows layout (matmul_bf16_avx512.cpp): dpbf16
// dot products of the weight rows with the f32 activations rounded to bf16 on the fly. Call
// only after the check cpu_features().avx512_bf16. Built twice like the other AVX-512 kernels
// (see avx512_intrinsics.h): natively into ember_core (namespace avx512) and on SIMDe for
// test_matmul_avx512 (namespace avx512_emulated).
#pragma once
#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

namespace avx512 {
const MatmulKernel* matmul_kernel_bf16();
}
namespace avx512_emulated {  // exists only in test_matmul_avx512 (SIMDe builds)
const MatmulKernel* matmul_kernel_bf16();
}

}  // namespace ember::cpu
