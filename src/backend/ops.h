// The op contract: everything a forward pass computes goes through these functions.
// The CPU implementation (backend/cpu/) is both the oracle (plain reference loops) and the
// fast path (SIMD picked at run time); cuda/ implements the same contract on the device.
//
// Conventions (ggml's): a weight matrix W has `n` rows of `k` elements stored in its dtype
// (quant blocks run along k); activations are f32 rows. matmul computes y = x W^T, i.e.
// y[t][j] = sum_i x[t][i] * W[j][i], like torch.nn.functional.linear(x, W).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>

#include "backend/kv_view.h"
#include "tensor/dtype.h"

namespace ember {

class StreamArena;  // util/stream_buffer.h

class ThreadPool;

// A 2-D view: `rows` rows of `cols` elements of `type`, rows `row_stride` bytes apart.
// Weight matrices may instead be `Interleaved`: repacked by ops::pack_weight for the CPU
// kernels, groups of rows stored together (then row() means nothing and row_stride is the
// bytes of one group); only matmul reads that layout.
enum class WeightLayout : uint8_t { Rows, Interleaved };

struct MatView {
  DType type = DType::F32;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_stride = 0;  // bytes; >= dtype_row_bytes(type, cols)
  const void* data = nullptr;
  WeightLayout layout = WeightLayout::Rows;
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_stride; }
};

// A weight matrix repacked for the CPU's fast kernels, owning its memory.
struct PackedWeight {
  MatView view;                    // layout Interleaved, data inside `storage`
  std::shared_ptr<uint8_t> storage;
  size_t bytes = 0;
};

// Mutable f32 2-D view (outputs and in-place ops). `stride` is in floats.
struct F32Mat {
  float* data = nullptr;
  int64_t cols = 0;
  int64_t rows = 0;
  int64_t stride = 0;
  float* row(int64_t r) const { return data + r * stride; }
};

// A read-only matrix view of an f32 matrix (input of matmul and friends).
inline MatView as_view(const F32Mat& m) {
  return MatView{DType::F32, m.cols, m.rows, static_cast<size_t>(m.stride) * sizeof(float), m.data};
}

struct RopeParams {
  int n_rot = 0;            // rotated dimensions per head (<= head_dim; the rest pass through)
  bool neox = false;        // false: adjacent pairs (x[2i], x[2i+1]) as llama; true: halves (x[i], x[i+n_rot/2])
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position scaling: theta = pos * freq_scale * base^(-2i/n_rot)
  // Variants (backend/rope_angle.h has the formula). Llama 3 rope_freqs and phi3's LongRoPE
  // factors: n_rot/2 divisors of each pair's angle, in the memory of the backend that rotates
  // (nullptr = none).
  const float* freq_factors = nullptr;
  // YaRN as ggml applies it: pair i's angle mixes the scaled (freq_scale) and unscaled ones by
  // ramp_i = ext_factor * (1 - clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1)).
  float ext_factor = 0.0f;  // 0: no mix, every pair scaled by freq_scale
  float corr_low = 0.0f;    // pair indices where the ramp leaves 1 / reaches 0
  float corr_high = 0.0f;
  float mscale = 1.0f;      // multiplies cos and sin (YaRN's and LongRoPE's attention factor)
};

// The gated unit of a feed-forward: out = act(gate) * up (SwiGLUOai: ops::swiglu_oai).
enum class Activation : uint8_t { SiLU, GELU, SwiGLUOai };
// gpt-oss's clamped SwiGLU constants (llama.cpp hard-codes them: llama-graph.cpp).
constexpr float kSwigluOaiAlpha = 1.702f;
constexpr float kSwigluOaiLimit = 7.0f;

struct AttentionParams {
  int n_head = 0;
  int n_head_kv = 0;        // GQA: query head h reads kv head h / (n_head / n_head_kv)
  int head_dim = 0;
  float scale = 1.0f;       // usually 1/sqrt(head_dim)
  int window = 0;           // sliding window: key visible when q_pos - k_pos < window; 0 = none
  float softcap = 0.0f;     // logit soft-cap: s = softcap * tanh(s / softcap); 0 = none
  // Attention sinks (gpt-oss): sinks[h] is a learned logit of head h that joins the softmax
  // denominator (e^(sinks[h] - max) added to the sum, no value), so a head may attend to
  // "nothing". In the backend's memory, n_head floats; null = none.
  const float* sinks = nullptr;
};

// How a mixture-of-experts layer picks its experts and weighs them (llama.cpp's
// build_moe_ffn): probabilities from the router logits, the n_used best by the selection
// score, their weights gathered from the probabilities.
enum class MoeGating : uint8_t {
  Softmax,          // probs = softmax(logits) over all experts (qwen*moe, mixtral, olmoe)
  Sigmoid,          // probs = sigmoid(logits) (deepseek-v3, glm4moe)
  SoftmaxSelected,  // probs = logits; the n_used chosen are softmaxed among themselves (gpt-oss)
};
struct MoeRouting {
  int n_expert = 0;                  // experts in the layer
  int n_used = 0;                    // experts each token runs (top-k)
  MoeGating gating = MoeGating::Softmax;
  bool norm_weights = false;         // weights /= max(sum, 2^-14) after selection (norm_topk_prob)
  float weights_scale = 0.0f;        // weights *= this unless 0 or 1 (expert_weights_scale)
  const float* selection_bias = nullptr;  // host [n_expert], added to probs only to choose (exp_probs_b)
};

namespace ops {

// y[t] = x[t] W^T for t < x.rows. y must hold x.rows x w.rows floats.
void matmul(ThreadPool& pool, const MatView& w, const MatView& x, F32Mat y);
// One weight matrix and its output, for matmul_same_input.
struct MatmulTarget {
  const MatView& w;
  F32Mat y;
};
// matmul(pool, t.w, x, t.y) for every target, as one dispatch to the pool: x is quantized
// once per activation format and the threads take row chunks from all the matrices in turn,
// so the small matrices (K and V in GQA) and the tail of each matrix cost no wait of their
// own. The outputs are bitwise those of separate matmul calls.
void matmul_same_input(ThreadPool& pool, std::initializer_list<MatmulTarget> targets, const MatView& x);
// The copy of weight matrix w (layout Rows) that the CPU's fast matmul kernels read fastest
// (rows interleaved in groups, so one thread streams one sequential range), or nullopt
// when this CPU reads w's type in place. Its products agree with w's to float rounding, and
// like every matmul, a token's output does not depend on the other tokens in the batch.
// `arena`, when given, holds the copy (see StreamArena: matrices below 2 MiB on huge pages).
std::optional<PackedWeight> pack_weight(const MatView& w, StreamArena* arena = nullptr);
#ifndef __CUDACC__  // host-only: nvcc compiles the kernels, which include this file, as C++17
// One expert projection and its output, for matmul_id.
struct ExpertTarget {
  std::span<const MatView> experts;  // [n_expert] slices of one 3-D GGUF tensor, equal shape and type
  F32Mat y;                          // n_tokens * n_used rows
};
// ggml's mul_mat_id: y[t*n_used + j] = x[r] W_{ids[t*n_used + j]}^T, where r = t when x has
// one row per token (the experts' shared input) and r = t*n_used + j when it has one per
// (token, slot). Rows are grouped by expert, so each expert used in the call is read once
// for all of its rows; a row's result is bitwise what it would be alone (batch invariance).
// Every target shares x and ids (gate and up in one dispatch). ids are host memory.
void matmul_id(ThreadPool& pool, std::initializer_list<ExpertTarget> targets, const MatView& x, const int32_t* ids,
               int n_used);
#endif
// The routing of each row of `logits` (tokens x n_expert): ids[t*n_used + j] the j-th best
// expert (ties: the lower id), weights[t*n_used + j] its weight. Host memory, row by row.
void moe_route(const MatView& logits, const MoeRouting& r, int32_t* ids, float* weights);
// out[t] = sum_j weights[t*n_used + j] * experts[t*n_used + j] (j ascending), then, when
// `shared` has data, + shared[t] scaled by sigmoid(shared_gate[t][0]) when that has data.
void moe_combine(ThreadPool& pool, const MatView& experts, const float* weights, int n_used, const MatView& shared,
                 const MatView& shared_gate, F32Mat out);
// out[t] = table[ids[t]] converted to f32.
void get_rows(ThreadPool& pool, const MatView& table, const int32_t* ids, int64_t n, F32Mat out);
// y = x / sqrt(mean(x^2) + eps) * (one_plus_w ? 1 + w : w); w may be null (no weight).
// y may alias x (in place).
void rms_norm(ThreadPool& pool, const MatView& x, const float* w, float eps, bool one_plus_w, F32Mat y);
// In place on x (rows = tokens, cols = n_heads * head_dim), pos[t] = position of row t.
// Positions may be negative (rotations compose: rope(p) then rope(-d) = rope(p - d)).
void rope(ThreadPool& pool, F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p);
// Elementwise on equal shapes; b may broadcast one row over all rows of a (b.rows == 1).
void add(ThreadPool& pool, F32Mat a, const MatView& b);   // a += b
void mul(ThreadPool& pool, F32Mat a, const MatView& b);   // a *= b
void scale(ThreadPool& pool, F32Mat a, float s);          // a *= s
// ggml's add_id: a[r] += b[ids[r]] for every row r of a (host ids, each in [0, b.rows)). The
// experts' biases: row t*n_used + j of a MoE projection gets row ids[t*n_used + j] of the
// [n_expert x width] bias table.
void add_id(ThreadPool& pool, F32Mat a, const MatView& b, const int32_t* ids);
void softmax(ThreadPool& pool, F32Mat a);                 // row-wise, stable; all -inf row -> zeros
// Gated units: out = act(gate) * up. SiLU(x) = x*sigmoid(x); GELU with the tanh approximation.
// out may alias gate or up.
void swiglu(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out);
void geglu(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out);
// gpt-oss's clamped SwiGLU (ggml's swiglu_oai): g = min(gate, limit), u = clamp(up, -limit,
// limit), out = g * sigmoid(alpha * g) * (u + 1).
void swiglu_oai(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out, float alpha, float limit);
// out = act(gate) * up for any Activation (SwiGLUOai with gpt-oss's constants).
void glu(ThreadPool& pool, Activation act, const MatView& gate, const MatView& up, F32Mat out);
// Causal attention of q (rows = query tokens, cols = n_head * head_dim) at positions q_pos
// over the KV cache (KVView): a key at position kp is visible to a query at qp when kp <= qp (and
// qp - kp < window). Tiled online softmax; never materialises the full score matrix.
// A query that sees no key (all masked or empty slots) gets a zero output row. A row's
// output depends only on that row, its position and the cache: never on the other rows of
// the call, so a token gives the same bits alone, in a verify batch or in a prefill chunk.
void attention(ThreadPool& pool, const MatView& q, const int32_t* q_pos, const KVView& kv,
               const AttentionParams& p, F32Mat out);
// Writes one f32 row into a KV cache slot in the cache's type (quantizing as needed);
// n must be a multiple of the type's block size (32 for q8_0 / q4_0).
void store_row(const float* src, int64_t n, DType type, void* dst);

}  // namespace ops
}  // namespace ember
