#include "model/layers.h"

#include <algorithm>
#include <cmath>

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

MatView bind_output(TensorBinder& b, const Hparams& hp, const MatView& tok_embd) {
  MatView out = b.matmul_matrix_optional("output.weight", hp.n_embd, hp.n_vocab);
  // Tied head: a repacked copy costs little real memory, as get_rows only ever faults in
  // the embedding rows it looks up.
  return out.data ? out : b.for_matmul(tok_embd);
}

RopeParams rope_params(const Hparams& hp, int il) {
  RopeParams p;
  p.n_rot = hp.n_rot;
  p.neox = hp.rope_neox;
  const bool swa = hp.is_swa(il);
  p.freq_base = swa ? hp.rope_freq_base_swa : hp.rope_freq_base;
  p.freq_scale = swa ? hp.rope_freq_scale_swa : hp.rope_freq_scale;
  return p;
}

// Every activation buffer with its size in floats for n_ub tokens; plan() and bytes_for()
// both walk this list so the printed plan is what gets allocated.
template <class F>
static void each_buffer(StepBuffers& b, const Hparams& hp, int n_ub, F&& f) {
  const size_t n = static_cast<size_t>(n_ub);
  const size_t n_ff = static_cast<size_t>(*std::max_element(hp.n_ff.begin(), hp.n_ff.end()));
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
}

void StepBuffers::plan(const Hparams& hp, int n_ub) {
  n_ubatch = n_ub;
  each_buffer(*this, hp, n_ub, [](std::vector<float>& v, size_t count) { v.assign(count, 0.0f); });
  slots.assign(n_ub, KVCache::Slot{0});
  out_rows.assign(n_ub, 0);
}

size_t StepBuffers::bytes_for(const Hparams& hp, int n_ub) {
  StepBuffers dry;
  size_t floats = 0;
  each_buffer(dry, hp, n_ub, [&](std::vector<float>&, size_t count) { floats += count; });
  return floats * sizeof(float) + static_cast<size_t>(n_ub) * (sizeof(KVCache::Slot) + sizeof(int32_t));
}

Step::Step(const Hparams& h, ThreadPool& pool, KVCache& kv, StepBuffers& buf, int n_tokens, const int32_t* tokens,
           const int32_t* pos, const int32_t* seq, int n_out, float* logits)
    : hp(h), pool_(pool), kv_(kv), buf_(buf), n_(n_tokens), tokens_(tokens), pos_(pos), seq_(seq), n_out_(n_out),
      logits_(logits) {
  if (n_tokens <= 0 || n_tokens > buf.n_ubatch)
    fail(ErrorKind::Internal, "step of {} tokens with buffers for {}", n_tokens, buf.n_ubatch);
  x = mat(buf.x, hp.n_embd);
  cur = mat(buf.cur, hp.n_embd);
  out = mat(buf.out, hp.n_embd);
}

F32Mat Step::mat(std::vector<float>& v, int64_t cols) const { return F32Mat{v.data(), cols, n_, cols}; }

void Step::embed(const MatView& tok_embd, float scale) {
  ops::get_rows(pool_, tok_embd, tokens_, n_, x);
  if (scale != 1.0f) ops::scale(pool_, x, scale);
}

void Step::rms_norm(F32Mat in, const float* w, F32Mat dst) {
  ops::rms_norm(pool_, as_view(in), w, hp.norm_eps, false, dst);
}

static MatView bias_row(const float* b, int64_t n) {
  return MatView{DType::F32, n, 1, static_cast<size_t>(n) * sizeof(float), b};
}

// Per-head RMS norm: view the n x (heads*head_dim) matrices as (n*heads) rows of head_dim.
static void norm_heads(ThreadPool& pool, F32Mat in, int head_dim, const float* w, float eps, F32Mat dst) {
  const int64_t rows = in.rows * (in.cols / head_dim);
  ops::rms_norm(pool, as_view(F32Mat{in.data, head_dim, rows, head_dim}), w, eps, false,
                F32Mat{dst.data, head_dim, rows, head_dim});
}

void Step::attention(int il, const AttnWeights& w, F32Mat in, F32Mat dst) {
  const int hd = hp.head_dim;
  F32Mat q = mat(buf_.q, static_cast<int64_t>(hp.n_head) * hd);
  F32Mat k = mat(buf_.k, hp.n_embd_k_gqa());
  F32Mat v = mat(buf_.v, hp.n_embd_v_gqa());
  F32Mat o = mat(buf_.attn, static_cast<int64_t>(hp.n_head) * hp.head_dim_v);
  const MatView xin = as_view(in);

  // q = x Wq^T (+ bq), k = x Wk^T (+ bk), v = x Wv^T (+ bv)
  ops::matmul_same_input(pool_, {{w.wq, q}, {w.wk, k}, {w.wv, v}}, xin);
  if (w.bq) ops::add(pool_, q, bias_row(w.bq, q.cols));
  if (w.bk) ops::add(pool_, k, bias_row(w.bk, k.cols));
  if (w.bv) ops::add(pool_, v, bias_row(w.bv, v.cols));
  if (w.q_norm) {  // the normalised heads land in a second buffer, which becomes q
    F32Mat qn = mat(buf_.q_normed, q.cols);
    norm_heads(pool_, q, hd, w.q_norm, hp.norm_eps, qn);
    q = qn;
  }
  if (w.k_norm) {
    F32Mat kn = mat(buf_.k_normed, k.cols);
    norm_heads(pool_, k, hd, w.k_norm, hp.norm_eps, kn);
    k = kn;
  }

  const RopeParams rp = rope_params(hp, il);
  ops::rope(pool_, q, hd, pos_, rp);
  ops::rope(pool_, k, hd, pos_, rp);

  // Store this ubatch's K/V rows into each token's sequence ring (slots were reserved by
  // the context before the layers ran), then attend per run of same-sequence tokens.
  const DType kt = kv_.config().k_type, vt = kv_.config().v_type;
  for (int t = 0; t < n_; ++t) {
    ops::store_row(k.row(t), k.cols, kt, kv_.k_row(il, seq_[t], buf_.slots[t]));
    ops::store_row(v.row(t), v.cols, vt, kv_.v_row(il, seq_[t], buf_.slots[t]));
  }
  AttentionParams ap;
  ap.n_head = hp.n_head;
  ap.n_head_kv = hp.n_head_kv;
  ap.head_dim = hd;
  ap.scale = hp.attn_scale > 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  ap.window = hp.is_swa(il) ? hp.n_swa : 0;
  ap.softcap = hp.attn_softcap;
  for (int r0 = 0; r0 < n_;) {
    int r1 = r0 + 1;
    while (r1 < n_ && seq_[r1] == seq_[r0]) ++r1;
    MatView qv{DType::F32, q.cols, r1 - r0, static_cast<size_t>(q.stride) * sizeof(float), q.row(r0)};
    F32Mat ov{o.row(r0), o.cols, r1 - r0, o.stride};
    ops::attention(pool_, qv, pos_ + r0, kv_.view(il, seq_[r0]), ap, ov);
    r0 = r1;
  }

  // dst = o Wo^T (+ bo)
  ops::matmul(pool_, w.wo, as_view(o), dst);
  if (w.bo) ops::add(pool_, dst, bias_row(w.bo, dst.cols));
}

void Step::ffn(const FfnWeights& w, Activation act, F32Mat in, F32Mat dst) {
  F32Mat g = mat(buf_.gate, w.n_ff), u = mat(buf_.up, w.n_ff), a = mat(buf_.act, w.n_ff);
  const MatView xin = as_view(in);
  ops::matmul_same_input(pool_, {{w.gate, g}, {w.up, u}}, xin);
  if (act == Activation::SiLU)
    ops::swiglu(pool_, as_view(g), as_view(u), a);
  else
    ops::geglu(pool_, as_view(g), as_view(u), a);
  ops::matmul(pool_, w.down, as_view(a), dst);
}

void Step::add(F32Mat a, F32Mat b) { ops::add(pool_, a, as_view(b)); }

void Step::logits(const float* norm_w, const MatView& output, float softcap) {
  if (n_out_ == 0) return;
  // Only the wanted rows go through the final norm and the (large) output matmul.
  F32Mat sel{buf_.out_x.data(), hp.n_embd, n_out_, hp.n_embd};
  F32Mat normed{cur.data, hp.n_embd, n_out_, hp.n_embd};
  for (int i = 0; i < n_out_; ++i) std::copy_n(x.row(buf_.out_rows[i]), hp.n_embd, sel.row(i));
  ops::rms_norm(pool_, as_view(sel), norm_w, hp.norm_eps, false, normed);
  F32Mat lg{logits_, hp.n_vocab, n_out_, hp.n_vocab};
  ops::matmul(pool_, output, as_view(normed), lg);
  if (softcap > 0.0f) {
    // logits = softcap * tanh(logits / softcap)  (Gemma 2 style final soft-capping)
    for (int64_t i = 0; i < static_cast<int64_t>(n_out_) * hp.n_vocab; ++i)
      logits_[i] = softcap * std::tanh(logits_[i] / softcap);
  }
}

}  // namespace ember
