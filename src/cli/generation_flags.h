// Flags shared by `run` and `chat` (llama.cpp's names): model and context setup, sampling.
//
// -ctk/-ctv: CLI11 (2.1) only knows one-letter short options, so it reads "-ctk q8_0" as
// -c with the value "tk" followed by a stray "q8_0". -c is therefore collected as text and
// the stray values are matched back to their -ctk/-ctv in finish_generation_flags().
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/draft_setup.h"
#include "engine/loaded_model.h"
#include "sampling/params.h"

namespace ember::cli {

struct GenerationFlags {
  std::string model;
  std::vector<std::string> ctx_values;  // -c N, or "tk"/"tv" from -ctk/-ctv
  int n_batch = 2048;
  int n_threads = 0;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool context_shift = false;
  int n_keep = 0;
  int n_predict = -1;
  long long seed = -1;
  SamplingParams sampling;
  DraftOptions draft;  // --draft, --draft-ngram, --draft-max, --draft-min (add_draft_flags)
};

void add_model_flags(CLI::App* cmd, GenerationFlags& flags);
void add_sampling_flags(CLI::App* cmd, GenerationFlags& flags);
// Speculative decoding (engine/draft_setup.h).
void add_draft_flags(CLI::App* cmd, GenerationFlags& flags);

// Resolves -c/-ctk/-ctv (see above) and validates; throws Error(InvalidArgument).
void finish_generation_flags(CLI::App* cmd, GenerationFlags& flags);

ModelSetup model_setup(const GenerationFlags& flags);
SamplingParams sampling_params(const GenerationFlags& flags);

}  // namespace ember::cli
