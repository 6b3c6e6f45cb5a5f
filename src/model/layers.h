// The building blocks architectures are assembled from: the tensors of an attention block
// and a gated FFN (with their binding), and Step, one ubatch in flight, whose methods are
// the forward pass's vocabulary (embed, rms_norm, attention, ffn, add, logits), each a few
// calls to the Backend (backend/backend.h), which knows the device. All buffers are planned
// once per Context in the backend's memory (StepBuffers); a step only takes views of them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/ops.h"
#include "model/arch.h"
#include "model/model.h"

namespace ember {

class TensorBinder;
struct MoeWeights;

struct AttnWeights {
  MatView wq, wk, wv, wo;              // [n_embd -> n_head*head_dim], [-> n_kv*head_dim] x2, [n_head*head_dim_v -> n_embd]
  const float* bq = nullptr;           // optional biases (qwen2), [n_head*head_dim] ...
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;           // [n_embd]
  const float* q_norm = nullptr;       // optional per-head RMS norms (qwen3, gemma3), [head_dim]
  const float* k_norm = nullptr;
  bool qk_norm_full_row = false;       // q_norm/k_norm span the whole q/k row instead (olmoe)
};

struct FfnWeights {
  MatView gate, up, down;              // [n_embd -> n_ff] x2, [n_ff -> n_embd]
  int n_ff = 0;
};

// Binds blk.<il>.attn_{q,k,v,output}.weight with optional .bias and, when `qk_norm`,
// the required attn_{q,k}_norm.weight.
AttnWeights bind_attention(TensorBinder& b, const Hparams& hp, int il, bool qk_norm);
// Binds blk.<il>.ffn_{gate,up,down}.weight.
FfnWeights bind_ffn(TensorBinder& b, const Hparams& hp, int il);
// The RoPE frequency factors of every layer, into attention[il]: rope_freqs.weight (Llama 3),
// or LongRoPE's rope_factors_short/long.weight (both or neither), each [n_rot/2].
void bind_rope_factors(TensorBinder& b, const Hparams& hp, std::vector<LayerAttention>& attention);
// output.weight, or the token embedding when the head is tied (absent output.weight).
MatView bind_output(TensorBinder& b, const Hparams& hp, const MatView& tok_embd);

// Activation memory for one ubatch of up to n_ubatch tokens, one allocation of the
// backend's memory carved into the buffers below.
struct StepBuffers {
  void plan(Backend& backend, const Hparams& hp, int n_ubatch);
  static size_t bytes_for(const Hparams& hp, int n_ubatch);  // what plan() allocates

  int n_ubatch = 0;
  float *x = nullptr, *cur = nullptr, *out = nullptr, *q = nullptr, *k = nullptr, *v = nullptr,
        *q_normed = nullptr, *k_normed = nullptr, *attn = nullptr, *gate = nullptr, *up = nullptr,
        *act = nullptr, *out_x = nullptr;
  // Mixture of experts (sized 0 for dense models): router logits, each token's expert ids
  // (int32) and weights, and the experts' rows (n_ubatch * n_expert_used of them).
  float *moe_logits = nullptr, *moe_ids = nullptr, *moe_weights = nullptr, *moe_gate = nullptr, *moe_up = nullptr,
        *moe_act = nullptr, *moe_down = nullptr, *shexp_out = nullptr, *shexp_gate = nullptr;

 private:
  std::unique_ptr<BackendBuffer> memory_;
};

class Step {
 public:
  // Where each layer computes: layer il on *backends[il] with *buffers[il] (that backend's
  // activations); a model split across devices has two of each.
  struct LayerBackends {
    std::vector<Backend*> backends;
    std::vector<StepBuffers*> buffers;
  };
  // Begins the ubatch `in` on every backend (the KV slots already taken); logits of the
  // wanted rows are written to host memory at `logits` (n_out x n_vocab). `attention` says
  // how each layer attends (ArchModel::attention).
  Step(const Hparams& hp, std::span<const LayerAttention> attention, const LayerBackends& placement,
       const StepKV& kv, const StepInputs& in, float* logits);

  const Hparams& hp;
  F32Mat x;    // residual stream, n_tokens x n_embd
  F32Mat cur;  // normalised input of a block, n_tokens x n_embd
  F32Mat out;  // a block's output before the residual add, n_tokens x n_embd

  // Layer il begins: when it runs on another backend than the layer before, the residual
  // stream moves there (x, cur and out then view that backend's buffers).
  void begin_layer(int il);
  // x = tok_embd[tokens] * scale
  void embed(const MatView& tok_embd, float scale);
  // dst = in / rms(in) * w  (w as the GGUF stores it; Gemma's 1 + w is folded in by its
  // converter). Deferred: when attention or ffn is the next op and reads dst, the backend
  // gets the norm with their matmuls (CUDA folds it into the activations' quantisation);
  // any other op computes it first.
  void rms_norm(F32Mat in, const float* w, F32Mat dst);
  // dst = attention block of layer il over in (projections, biases, q/k norms, RoPE, KV
  // store, causal attention per sequence, output projection)
  void attention(int il, const AttnWeights& w, F32Mat in, F32Mat dst);
  // dst = down(act(gate(in)) * up(in))
  void ffn(const FfnWeights& w, Activation act, F32Mat in, F32Mat dst);
  // dst = the mixture-of-experts FFN over in (router, top-k, experts, weighted sum, shared
  // expert): model/moe.cpp
  void moe(const MoeWeights& w, F32Mat in, F32Mat dst);
  // a += b
  void add(F32Mat a, F32Mat b);
  // logits of the wanted rows of x: output(rms_norm(x, norm_w)), optionally soft-capped
  void logits(const float* norm_w, const MatView& output, float softcap);
  // After the architecture's forward: every backend ends the step (CUDA launches a captured
  // graph and reads the logits back).
  void finish();

 private:
  std::vector<int> first_layer_of_each_backend() const;  // the layers where a backend's run begins
  F32Mat mat(float* data, int64_t cols) const;
  void use(int il);  // x, cur, out, be_ and buf_ of layer il's backend
  void flush_norm();                     // computes a deferred rms_norm
  MatmulInput matmul_input(F32Mat in);   // in, or the deferred norm that writes it
  struct PendingNorm {
    F32Mat src, dst;
    const float* w = nullptr;
  } pending_;                            // w == nullptr: none
  std::span<const LayerAttention> attention_;
  const LayerBackends& place_;
  Backend* be_ = nullptr;
  StepBuffers* buf_ = nullptr;
  int n_;
  int n_out_;
  float* logits_;
};


// RoPE parameters of a layer that attends as `a` (sliding-window layers may use their own base).
RopeParams rope_params(const Hparams& hp, const LayerAttention& a);

}  // namespace ember
