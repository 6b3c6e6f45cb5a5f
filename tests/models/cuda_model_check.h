// The CUDA backend's whole-model check, shared by the CPU execution of its kernels
// (test_cuda_cpu_model.cpp) and the GPU (test_cuda_model.cpp).
#pragma once
#include <cstdlib>
#include <vector>

#include "backend_check.h"
#include "cuda/step_graphs.h"
#include "models/model_support.h"

namespace ember::test {

// The CUDA backend with its kernels run on the CPU (EMBER_CUDA_ON_CPU=1 makes cpu_exec the
// CUDA device), every layer on it.
inline LoadOptions on_cuda_cpu() {
  setenv("EMBER_CUDA_ON_CPU", "1", 1);
  LoadOptions o = quiet_load();
  o.gpu_layers = 1000;
  return o;
}

// A tiny family on the device `load` picks, against the numpy reference (check_family) and
// against the CPU backend's logits for the same tokens.
inline void check_against_cpu(const std::string& arch, double rel_tol, DType kv, const LoadOptions& load) {
  const std::vector<float> cpu = check_family(arch, rel_tol, kv);
  const std::vector<float> gpu = check_family(arch, rel_tol, kv, load);
  const double e = check::nmse(gpu, cpu);
  MESSAGE(arch << ": NMSE of the CUDA backend's logits against the CPU backend's: " << e);
  // Both quantise activations to 8 bits for quantised weights, in different blocks (CUDA:
  // q8_1 with fp16 sums; CPU: its own per-kernel formats), and sum in different orders:
  // measured 4e-5..2.4e-4 on the Q8_0/Q4_0 tiny models. Float weights differ by rounding.
  CHECK(e <= (rel_tol < 1e-3 ? 1e-8 : 1e-3));
}

// A prompt per sequence, then `steps` decode steps of one token for each of n_seq sequences
// (one run per sequence in each step); every step's logits, in order.
inline std::vector<float> prompt_then_decode(const Model& model, int n_seq, int steps) {
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 96;
  o.n_seq = n_seq;
  o.n_ubatch = 32;
  Context ctx(model, quiet(o), pool);
  const int n_vocab = model.hparams().n_vocab;
  std::vector<float> all;
  for (int s = 0; s < n_seq; ++s) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 9 + 5 * s; ++i) prompt.push_back((13 * i + 7 * s + 1) % n_vocab);
    const auto out = run_batch(ctx, prompt, 0, prompt.size(), s);
    all.insert(all.end(), out.begin(), out.end());
  }
  for (int step = 0; step < steps; ++step) {
    Batch b;
    for (int s = 0; s < n_seq; ++s) b.add((step * 31 + s * 17 + 3) % n_vocab, -1, s, true);
    const auto out = ctx.decode(b);
    all.insert(all.end(), out.begin(), out.end());
  }
  return all;
}

// The same prompts and decode steps with every step launched op by op (EMBER_CUDA_GRAPHS=0)
// and with decode steps replayed as CUDA graphs: bitwise the same logits, and exactly the
// graphs expected (one decode shape: its first step runs, its second is captured).
inline void check_graphs_match_direct(const std::string& arch, int n_seq, int steps, const LoadOptions& load) {
  auto model = Model::load(tiny_model(arch), load);
  setenv("EMBER_CUDA_GRAPHS", "0", 1);
  const cuda::GraphCounts before_direct = cuda::graph_counts();
  const std::vector<float> direct = prompt_then_decode(*model, n_seq, steps);
  CHECK(cuda::graph_counts().captured == before_direct.captured);  // the switch turns graphs off
  unsetenv("EMBER_CUDA_GRAPHS");
  const cuda::GraphCounts before = cuda::graph_counts();
  const std::vector<float> graphs = prompt_then_decode(*model, n_seq, steps);
  const cuda::GraphCounts after = cuda::graph_counts();
  MESSAGE(arch << ", " << n_seq << " sequences: " << after.captured - before.captured << " graphs captured, "
               << after.replayed - before.replayed << " steps replayed");
  CHECK(after.captured - before.captured == 1);
  CHECK(after.replayed - before.replayed == steps - 2);
  REQUIRE(graphs.size() == direct.size());
  CHECK(graphs == direct);
}

}  // namespace ember::test
