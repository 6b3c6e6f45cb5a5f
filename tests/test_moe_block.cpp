// The MoE block checked against a plain loop written from llama.cpp's build_moe_ffn: a
// one-layer model's logits for a one-token prompt (whose attention output is its own V
// row, so the whole forward fits in a few lines here), computed from the file's weights with
// double accumulation, for qwen3moe (renormalised top-k) and qwen2moe (unnormalised, with
// the sigmoid-gated shared expert and Q/K/V biases).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backend_check.h"
#include "gguf/gguf.h"
#include "models/model_support.h"
#include "moe_models.h"
#include "tensor/quant.h"

using namespace ember;
using namespace ember::test;

namespace {

using Vec = std::vector<double>;

// Expert e (0 for 2-D tensors) of `name` as rows of floats.
std::vector<std::vector<float>> rows_of(const gguf::File& f, const std::string& name, int64_t e = 0) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  REQUIRE_MESSAGE(t, name);
  const size_t rb = dtype_row_bytes(t->type, t->ne[0]);
  std::vector<std::vector<float>> out(static_cast<size_t>(t->ne[1]), std::vector<float>(t->ne[0]));
  for (int64_t r = 0; r < t->ne[1]; ++r)
    dequantize_row(t->type, t->data + (e * t->ne[1] + r) * rb, out[r].data(), t->ne[0]);
  return out;
}
std::vector<float> vec_of(const gguf::File& f, const std::string& name) { return rows_of(f, name)[0]; }

// y = W x (+ b)
Vec linear(const std::vector<std::vector<float>>& w, const Vec& x, const std::vector<float>* b = nullptr) {
  Vec y(w.size());
  for (size_t j = 0; j < w.size(); ++j) {
    double s = b ? (*b)[j] : 0.0;
    for (size_t i = 0; i < x.size(); ++i) s += w[j][i] * x[i];
    y[j] = s;
  }
  return y;
}
Vec rms_norm(const Vec& x, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
  return y;
}
double silu(double v) { return v / (1.0 + std::exp(-v)); }

// down(silu(gate x) * up x) of blk.0.ffn_{gate,up,down}<suffix>, expert e
Vec swiglu_ffn(const gguf::File& f, const std::string& suffix, int64_t e, const Vec& x) {
  const Vec g = linear(rows_of(f, "blk.0.ffn_gate" + suffix, e), x), u = linear(rows_of(f, "blk.0.ffn_up" + suffix, e), x);
  Vec a(g.size());
  for (size_t i = 0; i < g.size(); ++i) a[i] = silu(g[i]) * u[i];
  return linear(rows_of(f, "blk.0.ffn_down" + suffix, e), a);
}

// build_moe_ffn: softmax over the router logits, top-k, optional renormalisation, the
// weighted sum of the chosen experts; plus the shared expert times sigmoid(gate . x).
Vec moe_ffn(const gguf::File& f, const Vec& x, int n_used, bool norm, bool shared) {
  Vec p = linear(rows_of(f, "blk.0.ffn_gate_inp.weight"), x);
  const double mx = *std::max_element(p.begin(), p.end());
  double z = 0;
  for (double& v : p) z += v = std::exp(v - mx);
  for (double& v : p) v /= z;
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  double wsum = 0;
  for (int j = 0; j < n_used; ++j) wsum += p[order[j]];
  Vec out(x.size(), 0.0);
  for (int j = 0; j < n_used; ++j) {
    const Vec d = swiglu_ffn(f, "_exps.weight", order[j], x);
    const double w = norm ? p[order[j]] / wsum : p[order[j]];
    for (size_t i = 0; i < out.size(); ++i) out[i] += w * d[i];
  }
  if (shared) {
    const Vec s = swiglu_ffn(f, "_shexp.weight", 0, x);
    const Vec g = linear({vec_of(f, "blk.0.ffn_gate_inp_shexp.weight")}, x);
    for (size_t i = 0; i < out.size(); ++i) out[i] += s[i] / (1.0 + std::exp(-g[0]));
  }
  return out;
}

// Logits of the one-token prompt `token` by the loops above.
std::vector<float> reference_logits(const gguf::File& f, const Hparams& hp, int32_t token, bool norm, bool shared) {
  const double eps = hp.norm_eps;
  Vec x(hp.n_embd);
  const std::vector<float> emb = rows_of(f, "token_embd.weight")[token];
  std::copy(emb.begin(), emb.end(), x.begin());
  const Vec h = rms_norm(x, vec_of(f, "blk.0.attn_norm.weight"), eps);
  const std::vector<float> bv = f.find_tensor("blk.0.attn_v.bias") ? vec_of(f, "blk.0.attn_v.bias") : std::vector<float>{};
  const Vec v = linear(rows_of(f, "blk.0.attn_v.weight"), h, bv.empty() ? nullptr : &bv);
  Vec attn;  // one key: each query head's output is its KV head's V row
  for (int hd = 0; hd < hp.n_head; ++hd) {
    const int kvh = hd / (hp.n_head / hp.n_head_kv);
    attn.insert(attn.end(), v.begin() + kvh * hp.head_dim, v.begin() + (kvh + 1) * hp.head_dim);
  }
  const Vec o = linear(rows_of(f, "blk.0.attn_output.weight"), attn);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  const Vec m = moe_ffn(f, rms_norm(x, vec_of(f, "blk.0.ffn_norm.weight"), eps), hp.n_expert_used, norm, shared);
  for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  const Vec lg = linear(rows_of(f, f.find_tensor("output.weight") ? "output.weight" : "token_embd.weight"),
                        rms_norm(x, vec_of(f, "output_norm.weight"), eps));
  return {lg.begin(), lg.end()};
}

}  // namespace

TEST_CASE("the MoE block matches a plain loop of build_moe_ffn (qwen3moe renormalised, qwen2moe shared expert)") {
  for (const auto& [arch, norm, shared] : {std::tuple{"qwen3moe", true, false}, {"qwen2moe", false, true}}) {
    const std::string arch_name = arch;
    CAPTURE(arch_name);
    auto o = tiny_moe_options(arch, "f32");
    o.shape.n_layer = 1;
    TempDir dir("moe-block");
    const std::string path = dir.file(arch_name + ".gguf");
    ThreadPool pool(2);
    synth::synth_model(o, path, &pool);
    auto model = Model::load(path, quiet_load());
    const gguf::File f = gguf::File::open(path);
    for (const int32_t token : {5, 1234, 31000}) {
      CAPTURE(token);
      Context ctx(*model, options(1), pool);
      const std::vector<float> got = run_batch(ctx, {token}, 0, 1);
      // V is stored as f16 in the cache: agreement to about its precision.
      check::expect_close(got, reference_logits(f, model->hparams(), token, norm, shared), 1e-6, arch_name);
    }
  }
}
