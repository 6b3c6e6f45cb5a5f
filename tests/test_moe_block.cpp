// The MoE block checked against a plain loop written from llama.cpp's build_moe_ffn: a
// one-layer model's logits for a one-token prompt (whose attention output is its own V
// row, so the whole forward fits in a few lines here), computed from the file's weights with
// double accumulation, for qwen3moe (renormalised top-k), qwen2moe (unnormalised, with
// the sigmoid-gated shared expert and Q/K/V biases) and gpt-oss (router and expert biases,
// top-k then softmax, the clamped SwiGLU, attention sinks and an output bias).
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
// gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai, alpha 1.702, limit 7)
double swiglu_oai(double g, double u) {
  g = std::min(g, 7.0);
  u = std::clamp(u, -7.0, 7.0);
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

// Which variant of build_moe_ffn a family is.
struct Family {
  const char* arch;
  bool norm, shared;
  bool gptoss = false;  // biases, top-k on the raw logits then softmax, swiglu_oai, sinks
};

// down(act(gate x) * up x) of blk.0.ffn_{gate,up,down}<suffix>, expert e, each projection with
// its expert's bias row when the file has <name>.bias (gpt-oss)
Vec swiglu_ffn(const gguf::File& f, const std::string& suffix, int64_t e, const Vec& x, bool oai = false) {
  const auto proj = [&](const std::string& name, const Vec& in) {
    const std::string bias = "blk.0." + name + suffix.substr(0, suffix.size() - std::string(".weight").size()) + ".bias";
    const std::vector<float> b = f.find_tensor(bias) ? rows_of(f, bias)[e] : std::vector<float>{};
    return linear(rows_of(f, "blk.0." + name + suffix, e), in, b.empty() ? nullptr : &b);
  };
  const Vec g = proj("ffn_gate", x), u = proj("ffn_up", x);
  Vec a(g.size());
  for (size_t i = 0; i < g.size(); ++i) a[i] = oai ? swiglu_oai(g[i], u[i]) : silu(g[i]) * u[i];
  return proj("ffn_down", a);
}

// p = softmax(p) in place
void softmax(Vec& p) {
  const double mx = *std::max_element(p.begin(), p.end());
  double z = 0;
  for (double& v : p) z += v = std::exp(v - mx);
  for (double& v : p) v /= z;
}

// build_moe_ffn: softmax over the router logits, top-k, optional renormalisation, the
// weighted sum of the chosen experts; plus the shared expert times sigmoid(gate . x).
// gpt-oss: logits plus the router bias, top-k on them, a softmax over the k chosen.
Vec moe_ffn(const gguf::File& f, const Vec& x, int n_used, const Family& fam) {
  const std::vector<float> rb = fam.gptoss ? vec_of(f, "blk.0.ffn_gate_inp.bias") : std::vector<float>{};
  Vec p = linear(rows_of(f, "blk.0.ffn_gate_inp.weight"), x, fam.gptoss ? &rb : nullptr);
  if (!fam.gptoss) softmax(p);
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  Vec w(n_used);
  for (int j = 0; j < n_used; ++j) w[j] = p[order[j]];
  if (fam.gptoss) softmax(w);
  const double wsum = std::accumulate(w.begin(), w.end(), 0.0);
  Vec out(x.size(), 0.0);
  for (int j = 0; j < n_used; ++j) {
    const Vec d = swiglu_ffn(f, "_exps.weight", order[j], x, fam.gptoss);
    const double wj = fam.norm ? w[j] / wsum : w[j];
    for (size_t i = 0; i < out.size(); ++i) out[i] += wj * d[i];
  }
  if (fam.shared) {
    const Vec s = swiglu_ffn(f, "_shexp.weight", 0, x);
    const Vec g = linear({vec_of(f, "blk.0.ffn_gate_inp_shexp.weight")}, x);
    for (size_t i = 0; i < out.size(); ++i) out[i] += s[i] / (1.0 + std::exp(-g[0]));
  }
  return out;
}

std::vector<float> optional_vec(const gguf::File& f, const std::string& name) {
  return f.find_tensor(name) ? vec_of(f, name) : std::vector<float>{};
}
const std::vector<float>* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : &v; }

// Attention of the one token at position 0 (RoPE is the identity there): each query head's
// output is its KV head's V row, weighted by e^s / (e^s + e^sink) with s = q.k * scale when
// the head has a sink (gpt-oss), else 1.
Vec one_token_attention(const gguf::File& f, const Hparams& hp, const Vec& h, bool sinks) {
  const std::vector<float> bq = optional_vec(f, "blk.0.attn_q.bias"), bk = optional_vec(f, "blk.0.attn_k.bias"),
                           bv = optional_vec(f, "blk.0.attn_v.bias");
  const Vec v = linear(rows_of(f, "blk.0.attn_v.weight"), h, or_null(bv));
  const Vec q = linear(rows_of(f, "blk.0.attn_q.weight"), h, or_null(bq)),
            k = linear(rows_of(f, "blk.0.attn_k.weight"), h, or_null(bk));
  const std::vector<float> sink = sinks ? vec_of(f, "blk.0.attn_sinks.weight") : std::vector<float>{};
  Vec attn;
  for (int hd = 0; hd < hp.n_head; ++hd) {
    const int kvh = hd / (hp.n_head / hp.n_head_kv);
    double weight = 1.0;
    if (sinks) {
      double s = 0;
      for (int i = 0; i < hp.head_dim; ++i) s += q[hd * hp.head_dim + i] * k[kvh * hp.head_dim + i];
      s /= std::sqrt(static_cast<double>(hp.head_dim));
      weight = 1.0 / (1.0 + std::exp(sink[hd] - s));
    }
    for (int i = 0; i < hp.head_dim; ++i) attn.push_back(weight * v[kvh * hp.head_dim + i]);
  }
  return attn;
}

// Logits of the one-token prompt `token` by the loops above.
std::vector<float> reference_logits(const gguf::File& f, const Hparams& hp, int32_t token, const Family& fam) {
  const double eps = hp.norm_eps;
  Vec x(hp.n_embd);
  const std::vector<float> emb = rows_of(f, "token_embd.weight")[token];
  std::copy(emb.begin(), emb.end(), x.begin());
  const Vec h = rms_norm(x, vec_of(f, "blk.0.attn_norm.weight"), eps);
  const std::vector<float> bo = optional_vec(f, "blk.0.attn_output.bias");
  const Vec o = linear(rows_of(f, "blk.0.attn_output.weight"), one_token_attention(f, hp, h, fam.gptoss), or_null(bo));
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  const char* ffn_norm = fam.gptoss ? "blk.0.post_attention_norm.weight" : "blk.0.ffn_norm.weight";
  const Vec m = moe_ffn(f, rms_norm(x, vec_of(f, ffn_norm), eps), hp.n_expert_used, fam);
  for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  const Vec lg = linear(rows_of(f, f.find_tensor("output.weight") ? "output.weight" : "token_embd.weight"),
                        rms_norm(x, vec_of(f, "output_norm.weight"), eps));
  return {lg.begin(), lg.end()};
}

}  // namespace

TEST_CASE("the MoE block matches a plain loop of build_moe_ffn (qwen3moe renormalised, qwen2moe shared expert, "
          "gpt-oss biases and sinks)") {
  for (const Family& fam : {Family{"qwen3moe", true, false}, Family{"qwen2moe", false, true},
                            Family{"gpt-oss", false, false, true}}) {
    const std::string arch_name = fam.arch;
    CAPTURE(arch_name);
    auto o = tiny_moe_options(arch_name, "f32");
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
      check::expect_close(got, reference_logits(f, model->hparams(), token, fam), 1e-6, arch_name);
    }
  }
}
