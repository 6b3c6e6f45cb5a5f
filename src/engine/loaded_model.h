// Everything `run` and `chat` need before the first token: the mapped model, its tokenizer,
// a thread pool and a context, loaded with a progress bar on a terminal.
#pragma once
#include <memory>
#include <string>

#include "util/thread_pool.h"
#include "backend/cpu/kernel_choice_setup.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct ModelSetup {
  std::string path;
  int n_threads = 0;  // 0: ThreadPool::default_threads()
  ContextOptions context;
  bool verbose = true;  // the loader's memory-plan lines on stderr
  bool repack = true;   // LoadOptions::repack (--no-repack turns it off)
  int gpu_layers = 0;   // LoadOptions::gpu_layers (-ngl)
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Context> context;
  double load_ms = 0;  // model + tokenizer + context, wall clock
};

// Which packed kernel variant each regime uses on `model`'s matrices, measured once per CPU
// model and cached (backend/cpu/kernel_choice_setup.h); for every command that runs a model,
// draft models and perplexity included. `verbose`: a line on stderr when it measures.
// Returns the choice per type and regime, and why (bench prints it).
cpu::KernelChoiceReport choose_cpu_kernels(ThreadPool& pool, const Model& model, bool verbose);

// Throws the loader's errors (Io, Format, Unsupported, OutOfMemory, InvalidArgument).
LoadedModel load_model(const ModelSetup& setup);

// What the context does when full, as one sentence for users.
std::string describe_context_policy(const ContextOptions& options);

}  // namespace ember
