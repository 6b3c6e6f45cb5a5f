// The oracle: plain, single-threaded loops for the ops of backend/ops.h (all but matmul and
// get_rows), each with the PyTorch line it implements. Written for obviousness, accumulating
// in double; the fast paths (SIMD, tiled, threaded) are tested against these.
#pragma once
#include "backend/ops.h"

namespace ember::ops::reference {

void rms_norm(const MatView& x, const float* w, float eps, bool one_plus_w, F32Mat y);
void rope(F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p);
void add(F32Mat a, const MatView& b);
void mul(F32Mat a, const MatView& b);
void scale(F32Mat a, float s);
void add_id(F32Mat a, const MatView& b, const int32_t* ids);  // a[r] += b[ids[r]]
void softmax(F32Mat a);
void swiglu(const MatView& gate, const MatView& up, F32Mat out);
void geglu(const MatView& gate, const MatView& up, F32Mat out);
void swiglu_oai(const MatView& gate, const MatView& up, F32Mat out, float alpha, float limit);
// One query row at a time over all slots: scores, mask, softmax, weighted sum of V.
void attention(const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p, F32Mat out);

// Scalar definitions shared with the fast paths' scalar fallbacks.
float silu(float x);        // x * sigmoid(x)
float gelu_tanh(float x);   // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
float swiglu_oai(float gate, float up, float alpha, float limit);  // one element of ops::swiglu_oai

}  // namespace ember::ops::reference
