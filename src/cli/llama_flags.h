// llama.cpp spells some short options with several letters (-ctk, -ctv, -ub). CLI11 only
// knows one-letter short options and would read "-ctk q8_0" as "-c tk" plus a stray value,
// so the command line is rewritten to the long spellings once, before parsing.
#pragma once
#include <string>
#include <vector>

namespace CLI { class App; }

namespace ember::cli {

// --no-repack (-nr), as llama.cpp spells it: keep every weight in the file mapping instead
// of repacking matmul weights for the CPU kernels (LoadOptions::repack).
void add_no_repack_flag(CLI::App* cmd, bool& no_repack);

// -ngl N (--n-gpu-layers, llama.cpp's flag): layers on the CUDA device, LoadOptions::gpu_layers;
// left at -1 when absent (every layer on the GPU when there is one). `flag` names a second
// such option (the draft model's --n-gpu-layers-draft, -ngld).
void add_gpu_layers_flag(CLI::App* cmd, int& gpu_layers, const char* flag = "--n-gpu-layers");

// -ctk/-ctv (--cache-type-k/--cache-type-v): the KV cache's K and V type names, parsed later
// by parse_kv_type (backend/kv_types.h); the help lists the table's names.
void add_kv_type_flags(CLI::App* cmd, std::string& k_type, std::string& v_type);

// argv with every llama.cpp multi-letter short flag replaced by its long form.
std::vector<std::string> expand_llama_flags(int argc, const char* const* argv);

}  // namespace ember::cli
