// Which weight types have a packed AVX2 kernel (see matmul_packed_avx2.h).
#include "backend/cpu/matmul_packed_avx2.h"

namespace ember::cpu {

const PackedKernel* packed_kernel_avx2(DType w) {
  switch (w) {
    case DType::Q4_0: return &kPackedQ4_0x8Avx2;
    default: return nullptr;
  }
}

}  // namespace ember::cpu
