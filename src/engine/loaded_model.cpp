#include "engine/loaded_model.h"

#include <chrono>

#include <fmt/format.h>

#include "util/error.h"
#include "util/progress.h"

namespace ember {

cpu::KernelChoiceReport choose_cpu_kernels(ThreadPool& pool, const Model& model, bool verbose) {
  cpu::KernelChoiceOptions choice = cpu::default_kernel_choice_options();
  choice.verbose = verbose;
  return cpu::choose_packed_kernels(pool, model.cpu_repacked_matrices(), choice);
}

LoadedModel load_model(const ModelSetup& setup) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel m;
  {
    ProgressBar bar("loading");
    LoadOptions options;
    options.n_threads = setup.n_threads;
    options.print_plan = setup.verbose;
    options.repack = setup.repack;
    options.gpu_layers = setup.gpu_layers;
    if (bar.enabled()) options.progress = [&bar](float fraction) { bar.update(fraction); };
    m.model = Model::load(setup.path, options);
  }
  m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(m.model->gguf()));
  m.pool = std::make_unique<ThreadPool>(setup.n_threads > 0 ? setup.n_threads : ThreadPool::default_threads());
  choose_cpu_kernels(*m.pool, *m.model, setup.verbose);
  ContextOptions context = setup.context;
  context.print_plan = setup.verbose;
  // Like llama.cpp, a context shift never drops the BOS token: --keep counts after it.
  if (context.policy == ContextPolicy::Shift && m.tokenizer->add_bos() && m.tokenizer->bos() >= 0) ++context.n_keep;
  m.context = std::make_unique<Context>(*m.model, context, *m.pool);
  m.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

std::string describe_context_policy(const ContextOptions& options) {
  if (options.policy == ContextPolicy::Shift)
    return fmt::format("when the context is full, the oldest half of the tokens after the first {} is dropped and "
                       "generation continues (--context-shift)",
                       options.n_keep);
  return "when the context is full, generation stops (--context-shift drops old tokens instead)";
}

}  // namespace ember
