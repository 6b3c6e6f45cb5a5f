// AVX2 activation quantization for the integer matmul kernels (quantize_act_avx2.cpp):
// bitwise the same bytes as quantize_act_row (quantize_act.cpp), 10-20x faster, which
// matters in decode where one token's row is quantized on one thread before every matmul.
// Call only after the AVX2 check.
#pragma once
#include <cstdint>

#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

// As quantize_act_row for ActFormat::Q8S and ActFormat::Q8K (not F32).
void quantize_act_row_avx2(ActFormat f, const float* x, void* dst, int64_t k);

}  // namespace ember::cpu
