#include "model/moe.h"

#include "gguf/gguf.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {

void read_moe_hparams(const gguf::File& file, Hparams& hp, const MoeFamily& family) {
  const uint32_t n_expert = arch_u32(file, hp, "expert_count").value_or(0);
  if (n_expert <= 1 && family.required)
    fail(ErrorKind::Format, "{}: {} needs {}.expert_count >= 2, the file has {}", file.source(), hp.arch, hp.arch, n_expert);
  if (n_expert <= 1) return;  // as llama.cpp: one expert is a dense model
  constexpr uint32_t kMaxExperts = 512;
  const uint32_t n_used = arch_u32(file, hp, "expert_used_count").value_or(0);
  if (n_expert > kMaxExperts || n_used == 0 || n_used > n_expert)
    fail(ErrorKind::Format, "{}: {}.expert_count {} / expert_used_count {} out of range (1 <= used <= count <= {})",
         file.source(), hp.arch, n_expert, n_used, kMaxExperts);
  if (arch_u32(file, hp, "expert_group_count").value_or(0) > 1)
    fail(ErrorKind::Unsupported, "{}: grouped expert selection (expert_group_count) is not supported", file.source());
  hp.n_expert = static_cast<int>(n_expert);
  hp.n_expert_used = static_cast<int>(n_used);
  hp.n_ff_exp = family.width == ExpertWidth::Ff
                  ? hp.n_ff[0]
                  : static_cast<int>(arch_u32(file, hp, "expert_feed_forward_length").value_or(hp.n_ff[0] / n_used));
  if (hp.n_ff_exp <= 0 || hp.n_ff_exp > (1 << 24))
    fail(ErrorKind::Format, "{}: expert feed-forward length {} out of range", file.source(), hp.n_ff_exp);
  if (family.shared_expert)
    hp.n_ff_shexp = static_cast<int>(arch_u32(file, hp, "expert_shared_feed_forward_length").value_or(hp.n_ff[0]));
  hp.moe_routing = MoeRouting{.n_expert = hp.n_expert,
                              .n_used = hp.n_expert_used,
                              .gating = family.gating,
                              .norm_weights = family.norm_weights,
                              .weights_scale = arch_f32(file, hp, "expert_weights_scale").value_or(0.0f)};
  hp.moe_act = family.act;
}

MoeWeights bind_moe(TensorBinder& b, const Hparams& hp, int il) {
  const int64_t e = hp.n_embd, n_exp = hp.n_expert;
  MoeWeights w;
  w.n_ff_exp = hp.n_ff_exp;
  w.routing = hp.moe_routing;
  w.router = b.matmul_matrix(blk(il, "ffn_gate_inp.weight"), e, n_exp);
  w.gate = b.matmul_experts(blk(il, "ffn_gate_exps.weight"), e, w.n_ff_exp, n_exp);
  w.up = b.matmul_experts(blk(il, "ffn_up_exps.weight"), e, w.n_ff_exp, n_exp);
  w.down = b.matmul_experts(blk(il, "ffn_down_exps.weight"), w.n_ff_exp, e, n_exp);
  w.routing.selection_bias = b.vector_optional(blk(il, "exp_probs_b.bias"), n_exp);
  w.act = hp.moe_act;
  w.router_bias = b.f32_table_optional(blk(il, "ffn_gate_inp.bias"), n_exp, 1);
  w.gate_bias = b.f32_table_optional(blk(il, "ffn_gate_exps.bias"), w.n_ff_exp, n_exp);
  w.up_bias = b.f32_table_optional(blk(il, "ffn_up_exps.bias"), w.n_ff_exp, n_exp);
  w.down_bias = b.f32_table_optional(blk(il, "ffn_down_exps.bias"), e, n_exp);
  if (hp.n_ff_shexp > 0) {
    w.shared.n_ff = hp.n_ff_shexp;
    w.shared.gate = b.matmul_matrix(blk(il, "ffn_gate_shexp.weight"), e, w.shared.n_ff);
    w.shared.up = b.matmul_matrix(blk(il, "ffn_up_shexp.weight"), e, w.shared.n_ff);
    w.shared.down = b.matmul_matrix(blk(il, "ffn_down_shexp.weight"), w.shared.n_ff, e);
    // A 1-D [n_embd] tensor in the file: the one row of a [n_embd -> 1] matrix.
    if (const float* g = b.vector_optional(blk(il, "ffn_gate_inp_shexp.weight"), e))
      w.shared_gate = MatView{DType::F32, e, 1, static_cast<size_t>(e) * sizeof(float), g};
  }
  return w;
}

void Step::moe(const MoeWeights& w, F32Mat in, F32Mat dst) {
  const int k = w.routing.n_used;
  const int64_t n_slots = static_cast<int64_t>(n_) * k;
  flush_norm();  // in is read by several matmuls: its norm is computed once, into in
  const MatView xn = as_view(in);
  // probs = route(x W_router^T): each token's k experts and their weights
  F32Mat logits = mat(buf_->moe_logits, w.routing.n_expert);
  be_->matmul(w.router, xn, logits);
  if (w.router_bias.data) be_->add(logits, w.router_bias);
  int32_t* ids = reinterpret_cast<int32_t*>(buf_->moe_ids);
  be_->moe_route(logits, w.routing, ids, buf_->moe_weights);
  // slot j of token t: down_e(act(gate_e(x_t)) * up_e(x_t)), e = ids[t*k + j], each
  // projection plus its expert's bias where the family has them (ggml's add_id)
  const auto slots = [&](float* data, int64_t cols) { return F32Mat{data, cols, n_slots, cols}; };
  const F32Mat g = slots(buf_->moe_gate, w.n_ff_exp), u = slots(buf_->moe_up, w.n_ff_exp),
               a = slots(buf_->moe_act, w.n_ff_exp), d = slots(buf_->moe_down, hp.n_embd);
  if (w.gate_bias.data || w.up_bias.data) {
    be_->matmul_id(w.gate, xn, ids, k, g);
    be_->matmul_id(w.up, xn, ids, k, u);
    if (w.gate_bias.data) be_->add_id(g, w.gate_bias, ids);
    if (w.up_bias.data) be_->add_id(u, w.up_bias, ids);
    be_->glu(w.act, as_view(g), as_view(u), a);
  } else {
    be_->gated_up_id(w.act, w.gate, w.up, MatmulInput{xn}, ids, k, g, u, a);
  }
  be_->matmul_id(w.down, as_view(a), ids, k, d);
  if (w.down_bias.data) be_->add_id(d, w.down_bias, ids);
  // dst = sum_j weight_j * slot_j (+ sigmoid(x . shared_gate) * shared(x))
  F32Mat shared{}, shared_gate{};
  if (w.shared.n_ff > 0) {
    shared = mat(buf_->shexp_out, hp.n_embd);
    F32Mat sg = mat(buf_->gate, w.shared.n_ff), su = mat(buf_->up, w.shared.n_ff), sa = mat(buf_->act, w.shared.n_ff);
    be_->gated_up(Activation::SiLU, w.shared.gate, w.shared.up, MatmulInput{xn}, sg, su, sa);
    be_->matmul(w.shared.down, as_view(sa), shared);
    if (w.shared_gate.data) {
      shared_gate = mat(buf_->shexp_gate, 1);
      be_->matmul(w.shared_gate, xn, shared_gate);
    }
  }
  be_->moe_combine(as_view(d), buf_->moe_weights, k, shared.data ? as_view(shared) : MatView{},
                   shared_gate.data ? as_view(shared_gate) : MatView{}, dst);
}

}  // namespace ember
