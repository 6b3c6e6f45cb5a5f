#include "model/layers.h"

#include <algorithm>
#include <cmath>

#include "gguf/gguf.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {

AttnWeights bind_attention(TensorBinder& b, const Hparams& hp, int il, bool qk_norm) {
  const int64_t nq = static_cast<int64_t>(hp.n_head) * hp.head_dim;
  const int64_t nk = hp.n_embd_k_gqa(), nv = hp.n_embd_v_gqa();
  const int64_t no = static_cast<int64_t>(hp.n_head) * hp.head_dim_v;
  AttnWeights w;
  w.wq = b.matmul_matrix(blk(il, "attn_q.weight"), hp.n_embd, nq);
  w.wk = b.matmul_matrix(blk(il, "attn_k.weight"), hp.n_embd, nk);
  w.wv = b.matmul_matrix(blk(il, "attn_v.weight"), hp.n_embd, nv);
  w.wo = b.matmul_matrix(blk(il, "attn_output.weight"), no, hp.n_embd);
  w.bq = b.vector_optional(blk(il, "attn_q.bias"), nq);
  w.bk = b.vector_optional(blk(il, "attn_k.bias"), nk);
  w.bv = b.vector_optional(blk(il, "attn_v.bias"), nv);
  w.bo = b.vector_optional(blk(il, "attn_output.bias"), hp.n_embd);
  if (qk_norm) {
    w.q_norm = b.vector(blk(il, "attn_q_norm.weight"), hp.head_dim);
    w.k_norm = b.vector(blk(il, "attn_k_norm.weight"), hp.head_dim);
  }
  return w;
}

FfnWeights bind_ffn(TensorBinder& b, const Hparams& hp, int il) {
  FfnWeights w;
  w.n_ff = hp.n_ff[il];
  w.gate = b.matmul_matrix(blk(il, "ffn_gate.weight"), hp.n_embd, w.n_ff);
  w.up = b.matmul_matrix(blk(il, "ffn_up.weight"), hp.n_embd, w.n_ff);
  w.down = b.matmul_matrix(blk(il, "ffn_down.weight"), w.n_ff, hp.n_embd);
  return w;
}

void bind_rope_factors(TensorBinder& b, const Hparams& hp, std::vector<LayerAttention>& attention) {
  const int64_t n = hp.n_rot / 2;
  for (int il = 0; il < hp.n_layer; ++il) {
    LayerAttention& a = attention[il];
    a.rope_factors = b.layer_vector_optional("rope_freqs.weight", n, il);
    if (a.rope_factors) continue;
    a.rope_factors = b.layer_vector_optional("rope_factors_short.weight", n, il);
    a.rope_factors_long = b.layer_vector_optional("rope_factors_long.weight", n, il);
    if (!a.rope_factors != !a.rope_factors_long)
      fail(ErrorKind::Format, "{}: rope_factors_short.weight and rope_factors_long.weight come together",
           b.file().source());
  }
}

MatView bind_output(TensorBinder& b, const Hparams& hp, const MatView& tok_embd) {
  MatView out = b.matmul_matrix_optional("output.weight", hp.n_embd, hp.n_vocab);
  // Tied head: token_embd bound again for matmul. On the CPU a repacked copy costs little
  // real memory, as get_rows only ever faults in the embedding rows it looks up.
  return out.data ? out : b.matmul_matrix("token_embd.weight", tok_embd.cols, tok_embd.rows);
}

LayerAttention default_attention(const Hparams& hp) {
  LayerAttention a;
  a.rope_freq_base = hp.rope_freq_base;
  a.rope_freq_scale = hp.rope_freq_scale;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  return a;
}

LayerAttention LayerAttention::for_context(const Hparams& hp, int n_ctx) const {
  LayerAttention a = *this;
  if (rope_factors_long && n_ctx > hp.n_ctx_orig) a.rope_factors = rope_factors_long;  // as llama.cpp
  a.rope_factors_long = nullptr;
  return a;
}

// ggml_rope_yarn_corr_dim: the pair index whose wavelength fits n_ctx_orig / n_turns times.
static float yarn_corr_dim(int n_rot, int n_ctx_orig, float n_turns, float base) {
  return n_rot * std::log(n_ctx_orig / (n_turns * 2.0f * 3.14159265358979f)) / (2.0f * std::log(base));
}

RopeParams rope_params(const Hparams& hp, const LayerAttention& a) {
  RopeParams p;
  p.n_rot = hp.n_rot;
  p.neox = hp.rope_neox;
  p.freq_base = a.rope_freq_base;
  p.freq_scale = a.rope_freq_scale;
  p.freq_factors = a.rope_factors;
  p.mscale = hp.rope_attn_factor;
  if (hp.rope_ext_factor != 0.0f) {  // YaRN: ramp between ggml's correction dims
    p.ext_factor = hp.rope_ext_factor;
    p.corr_low = std::max(0.0f, std::floor(yarn_corr_dim(hp.n_rot, hp.n_ctx_orig, hp.rope_beta_fast, p.freq_base)));
    p.corr_high = std::min(hp.n_rot - 1.0f, std::ceil(yarn_corr_dim(hp.n_rot, hp.n_ctx_orig, hp.rope_beta_slow, p.freq_base)));
    p.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);  // ggml's rope_yarn
  }
  return p;
}

// Every activation buffer with its size in floats for n_ub tokens; plan() and bytes_for()
// both walk this list so the printed plan is what gets allocated.
template <class F>
static void each_buffer(StepBuffers& b, const Hparams& hp, int n_ub, F&& f) {
  const size_t n = static_cast<size_t>(n_ub);
  const size_t n_ff = static_cast<size_t>(std::max(*std::max_element(hp.n_ff.begin(), hp.n_ff.end()), hp.n_ff_shexp));
  const size_t nq = static_cast<size_t>(hp.n_head) * hp.head_dim;
  f(b.x, n * hp.n_embd);
  f(b.cur, n * hp.n_embd);
  f(b.out, n * hp.n_embd);
  f(b.out_x, n * hp.n_embd);
  f(b.q, n * nq);
  f(b.q_normed, n * nq);
  f(b.k, n * hp.n_embd_k_gqa());
  f(b.k_normed, n * hp.n_embd_k_gqa());
  f(b.v, n * hp.n_embd_v_gqa());
  f(b.attn, n * hp.n_head * hp.head_dim_v);
  f(b.gate, n * n_ff);
  f(b.up, n * n_ff);
  f(b.act, n * n_ff);
  const size_t n_slots = n * hp.n_expert_used;
  f(b.moe_logits, n * hp.n_expert);
  f(b.moe_ids, n_slots);
  f(b.moe_weights, n_slots);
  f(b.moe_gate, n_slots * hp.n_ff_exp);
  f(b.moe_up, n_slots * hp.n_ff_exp);
  f(b.moe_act, n_slots * hp.n_ff_exp);
  f(b.moe_down, n_slots * hp.n_embd);
  f(b.shexp_out, hp.n_ff_shexp > 0 ? n * hp.n_embd : 0);
  f(b.shexp_gate, hp.n_ff_shexp > 0 ? n : 0);
}

// Each buffer starts on a 64-byte boundary (the SIMD kernels' aligned loads).
static size_t padded_floats(size_t count) { return (count + 15) / 16 * 16; }

void StepBuffers::plan(Backend& backend, const Hparams& hp, int n_ub) {
  n_ubatch = n_ub;
  memory_ = backend.allocate(bytes_for(hp, n_ub));
  float* next = static_cast<float*>(memory_->data());
  each_buffer(*this, hp, n_ub, [&](float*& p, size_t count) {
    p = next;
    next += padded_floats(count);
  });
}

size_t StepBuffers::bytes_for(const Hparams& hp, int n_ub) {
  StepBuffers dry;
  size_t floats = 0;
  each_buffer(dry, hp, n_ub, [&](float*&, size_t count) { floats += padded_floats(count); });
  return floats * sizeof(float);
}

Step::Step(const Hparams& h, std::span<const LayerAttention> attention, const LayerBackends& placement,
           const StepKV& kv, const StepInputs& in, float* logits)
    : hp(h), attention_(attention), place_(placement), n_(in.n_tokens), n_out_(in.n_out), logits_(logits) {
  for (const int il : first_layer_of_each_backend()) {
    if (n_ <= 0 || n_ > placement.buffers[il]->n_ubatch)
      fail(ErrorKind::Internal, "step of {} tokens with buffers for {}", n_, placement.buffers[il]->n_ubatch);
    placement.backends[il]->begin_step(kv, in);
  }
  use(0);
}

std::vector<int> Step::first_layer_of_each_backend() const {
  std::vector<int> first;
  for (size_t il = 0; il < place_.backends.size(); ++il)
    if (il == 0 || place_.backends[il] != place_.backends[il - 1]) first.push_back(static_cast<int>(il));
  return first;
}

void Step::use(int il) {
  be_ = place_.backends[il];
  buf_ = place_.buffers[il];
  x = mat(buf_->x, hp.n_embd);
  cur = mat(buf_->cur, hp.n_embd);
  out = mat(buf_->out, hp.n_embd);
}

void Step::begin_layer(int il) {
  flush_norm();
  if (place_.backends[il] == be_) return;
  Backend& from = *be_;
  const float* src = x.data;
  use(il);
  // One side is host memory: the CPU's (a split puts the first layers there).
  const size_t bytes = static_cast<size_t>(n_) * hp.n_embd * sizeof(float);
  if (from.kind() == DeviceKind::Cpu)
    be_->write(x.data, src, bytes);
  else
    from.read(x.data, src, bytes);
}

void Step::finish() {
  flush_norm();
  for (const int il : first_layer_of_each_backend()) place_.backends[il]->end_step();
}

F32Mat Step::mat(float* data, int64_t cols) const { return F32Mat{data, cols, n_, cols}; }

void Step::embed(const MatView& tok_embd, float scale) {
  flush_norm();
  be_->embed(tok_embd, scale, x);
}

void Step::rms_norm(F32Mat in, const float* w, F32Mat dst) {
  flush_norm();
  pending_ = PendingNorm{in, dst, w};
}

void Step::flush_norm() {
  if (!pending_.w) return;
  be_->rms_norm(as_view(pending_.src), pending_.w, hp.norm_eps, pending_.dst);
  pending_.w = nullptr;
}

MatmulInput Step::matmul_input(F32Mat in) {
  if (pending_.w && pending_.dst.data == in.data) {
    const MatmulInput fused{as_view(pending_.src), pending_.w, hp.norm_eps, pending_.dst};
    pending_.w = nullptr;
    return fused;
  }
  flush_norm();
  return MatmulInput{as_view(in)};
}

static MatView bias_row(const float* b, int64_t n) {
  return MatView{DType::F32, n, 1, static_cast<size_t>(n) * sizeof(float), b};
}

// Per-head RMS norm: view the n x (heads*head_dim) matrices as (n*heads) rows of head_dim.
static void norm_heads(Backend& be, F32Mat in, int head_dim, const float* w, float eps, F32Mat dst) {
  const int64_t rows = in.rows * (in.cols / head_dim);
  be.rms_norm(as_view(F32Mat{in.data, head_dim, rows, head_dim}), w, eps, F32Mat{dst.data, head_dim, rows, head_dim});
}

static AttentionParams attention_params(const Hparams& hp, const LayerAttention& a) {
  AttentionParams ap;
  ap.n_head = hp.n_head;
  ap.n_head_kv = hp.n_head_kv;
  ap.head_dim = hp.head_dim;
  ap.scale = a.scale;
  ap.window = a.window;
  ap.softcap = a.softcap;
  ap.sinks = a.sinks;
  return ap;
}

void Step::attention(int il, const AttnWeights& w, F32Mat in, F32Mat dst) {
  const int hd = hp.head_dim;
  F32Mat q = mat(buf_->q, static_cast<int64_t>(hp.n_head) * hd);
  F32Mat k = mat(buf_->k, hp.n_embd_k_gqa());
  F32Mat v = mat(buf_->v, hp.n_embd_v_gqa());
  F32Mat o = mat(buf_->attn, static_cast<int64_t>(hp.n_head) * hp.head_dim_v);
  // q = x Wq^T (+ bq), k = x Wk^T (+ bk), v = x Wv^T (+ bv)
  be_->matmul_same_input({{w.wq, q}, {w.wk, k}, {w.wv, v}}, matmul_input(in));
  if (w.bq) be_->add(q, bias_row(w.bq, q.cols));
  if (w.bk) be_->add(k, bias_row(w.bk, k.cols));
  if (w.bv) be_->add(v, bias_row(w.bv, v.cols));
  if (w.q_norm) {  // the normalised heads land in a second buffer, which becomes q
    F32Mat qn = mat(buf_->q_normed, q.cols);
    norm_heads(*be_, q, w.qk_norm_full_row ? static_cast<int>(q.cols) : hd, w.q_norm, hp.norm_eps, qn);
    q = qn;
  }
  if (w.k_norm) {
    F32Mat kn = mat(buf_->k_normed, k.cols);
    norm_heads(*be_, k, w.qk_norm_full_row ? static_cast<int>(k.cols) : hd, w.k_norm, hp.norm_eps, kn);
    k = kn;
  }

  // RoPE, each token's K/V rows into its slot (taken by the context before the layers
  // ran), then every query row over its own sequence's cache.
  be_->rope_store_kv(il, q, k, v, hd, rope_params(hp, attention_[il]));
  be_->attention(il, as_view(q), attention_params(hp, attention_[il]), o);

  // dst = o Wo^T (+ bo)
  be_->matmul(w.wo, as_view(o), dst);
  if (w.bo) be_->add(dst, bias_row(w.bo, dst.cols));
}

void Step::ffn(const FfnWeights& w, Activation act, F32Mat in, F32Mat dst) {
  F32Mat g = mat(buf_->gate, w.n_ff), u = mat(buf_->up, w.n_ff), a = mat(buf_->act, w.n_ff);
  be_->gated_up(act, w.gate, w.up, matmul_input(in), g, u, a);
  be_->matmul(w.down, as_view(a), dst);
}

void Step::add(F32Mat a, F32Mat b) {
  flush_norm();
  be_->add(a, as_view(b));
}

void Step::logits(const float* norm_w, const MatView& output, float softcap) {
  flush_norm();
  if (n_out_ == 0) return;
  // Only the wanted rows go through the final norm and the (large) output matmul.
  F32Mat sel{buf_->out_x, hp.n_embd, n_out_, hp.n_embd};
  F32Mat normed{cur.data, hp.n_embd, n_out_, hp.n_embd};
  be_->gather_out_rows(x, sel);
  be_->rms_norm(as_view(sel), norm_w, hp.norm_eps, normed);
  const F32Mat lg = be_->logits_target(logits_, n_out_, hp.n_vocab);
  be_->matmul(output, as_view(normed), lg);
  if (softcap > 0.0f) be_->softcap(lg, softcap);
  be_->finish_logits(lg, logits_);
}

}  // namespace ember
