// Flags shared by `run` and `chat` (llama.cpp's names): model and context setup, sampling.
// -ctk/-ctv arrive as --cache-type-k/--cache-type-v (cli/llama_flags.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/draft/draft_setup.h"
#include "engine/loaded_model.h"
#include "sampling/params.h"

namespace ember::cli {

struct GenerationFlags {
  std::string model;
  int n_ctx = 0;  // tokens; 0: the model's training context, at most 4096
  int n_batch = 2048;
  int n_ubatch = 512;  // tokens per forward pass (-ub)
  int n_threads = 0;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool context_shift = false;
  bool no_repack = false;  // --no-repack (-nr): weights stay in the file mapping
  int gpu_layers = -1;     // -ngl: layers on the CUDA device (-1: all when there is one)
  int n_keep = 0;
  int n_predict = -1;
  long long seed = -1;
  SamplingParams sampling;
  DraftOptions draft;  // --draft, --draft-ngram, --draft-max, --draft-min (add_draft_flags)
};

void add_model_flags(CLI::App* cmd, GenerationFlags& flags);
void add_sampling_flags(CLI::App* cmd, GenerationFlags& flags);
// Speculative decoding (engine/draft_setup.h): --draft, --draft-ngram, --draft-max,
// --draft-min, --draft-fixed. The DraftOptions form serves `bench`, which has no
// GenerationFlags.
void add_draft_flags(CLI::App* cmd, GenerationFlags& flags);
void add_draft_flags(CLI::App* cmd, DraftOptions& options);

// Validates the parsed flags; throws Error(InvalidArgument).
void finish_generation_flags(GenerationFlags& flags);

ModelSetup model_setup(const GenerationFlags& flags);
SamplingParams sampling_params(const GenerationFlags& flags);

}  // namespace ember::cli
