// Which weight types have a packed AVX2 kernel, and which the four-stream decode walk or the
// near decode prefetch (see matmul_packed_avx2.h).
#include "backend/cpu/matmul_packed_avx2.h"

namespace ember::cpu {

const PackedKernel* packed_kernel_avx2(DType w) {
  switch (w) {
    case DType::Q4_0: return &kPackedQ4_0x8Avx2;
    case DType::Q5_0: return &kPackedQ5_0x8Avx2;
    case DType::Q4_1: return &kPackedQ4_1x8Avx2;
    case DType::Q5_1: return &kPackedQ5_1x8Avx2;
    case DType::Q4_K: return &kPackedQ4_Kx8Avx2;
    case DType::Q5_K: return &kPackedQ5_Kx8Avx2;
    case DType::Q6_K: return &kPackedQ6_Kx8Avx2;
    case DType::Q8_0: return &kPackedQ8_0x8Avx2;
    case DType::MXFP4: return &kPackedMXFP4x8Avx2;
    case DType::F16: return &kPackedF16x8Avx2;
    default: return nullptr;
  }
}

const PackedKernel* packed_kernel_avx2_four_streams(DType w) {
  switch (w) {
    case DType::Q4_0: return &kPackedQ4_0x8Avx2FourStreams;
    case DType::Q5_0: return &kPackedQ5_0x8Avx2FourStreams;
    case DType::Q4_1: return &kPackedQ4_1x8Avx2FourStreams;
    case DType::Q5_1: return &kPackedQ5_1x8Avx2FourStreams;
    case DType::Q8_0: return &kPackedQ8_0x8Avx2FourStreams;
    default: return nullptr;
  }
}

const PackedKernel* packed_kernel_avx2_near_prefetch(DType w) {
  switch (w) {
    case DType::Q4_0: return &kPackedQ4_0x8Avx2NearPrefetch;
    case DType::Q5_0: return &kPackedQ5_0x8Avx2NearPrefetch;
    case DType::Q4_1: return &kPackedQ4_1x8Avx2NearPrefetch;
    case DType::Q5_1: return &kPackedQ5_1x8Avx2NearPrefetch;
    case DType::Q8_0: return &kPackedQ8_0x8Avx2NearPrefetch;
    case DType::Q4_K: return &kPackedQ4_Kx8Avx2NearPrefetch;
    case DType::Q5_K: return &kPackedQ5_Kx8Avx2NearPrefetch;
    default: return nullptr;
  }
}

}  // namespace ember::cpu
