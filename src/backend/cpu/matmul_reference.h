// The oracle for ops::matmul: dequantize each weight row to f32 with the reference
// dequantizer and accumulate each dot product in double. Single-threaded and slow on
// purpose; tests and benchmarks compare the fast paths with it.
#pragma once
#include "backend/ops.h"

namespace ember::ops::reference {

// y[t][j] = sum_i x[t][i] * W[j][i]   (torch: y = x @ W.T), same shapes as ops::matmul.
void matmul(const MatView& w, const MatView& x, F32Mat y);
// ops::matmul_id, one output row at a time: each row's expert slice through matmul above.
void matmul_id(const ExpertTarget& target, const MatView& x, const int32_t* ids, int n_used);

}  // namespace ember::ops::reference
