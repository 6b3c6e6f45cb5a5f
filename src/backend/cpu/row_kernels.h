// Per-row AVX2 kernels of the simple ops, defined in the *_avx2.cpp files and chosen at run
// time (simd_level() >= AVX2); the scalar path of each op is its reference row loop.
#pragma once
#include <cstdint>

namespace ember::ops::avx2 {

void rms_norm_row(const float* x, const float* w, float eps, bool one_plus_w, int64_t n, float* y);
void softmax_row(float* x, int64_t n);
void swiglu_row(const float* gate, const float* up, int64_t n, float* out);
void geglu_row(const float* gate, const float* up, int64_t n, float* out);
void swiglu_oai_row(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out);

}  // namespace ember::ops::avx2
