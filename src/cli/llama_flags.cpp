#include "cli/llama_flags.h"

#include <CLI/CLI.hpp>

#include <string_view>
#include <utility>

#include "backend/kv_types.h"

namespace ember::cli {

namespace {
constexpr std::pair<std::string_view, std::string_view> kLongForms[] = {
    {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"},
    {"-ub", "--ubatch-size"},
    {"-nr", "--no-repack"},
    {"-np", "--parallel"},
    {"-ngl", "--n-gpu-layers"},  // so that "-ngl 99" is not read as "-n gl"
    {"-ngld", "--n-gpu-layers-draft"},
};
}  // namespace

std::vector<std::string> expand_llama_flags(int argc, const char* const* argv) {
  std::vector<std::string> args;
  args.reserve(static_cast<size_t>(argc));
  bool after_double_dash = false;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") after_double_dash = true;
    std::string expanded(arg);
    if (i > 0 && !after_double_dash) {
      for (auto [short_form, long_form] : kLongForms) {
        if (arg == short_form) {
          expanded = long_form;
        } else if (arg.size() > short_form.size() + 1 && arg.substr(0, short_form.size()) == short_form &&
                   arg[short_form.size()] == '=') {  // -ctk=q8_0
          expanded = std::string(long_form) + std::string(arg.substr(short_form.size()));
        }
      }
    }
    args.push_back(std::move(expanded));
  }
  return args;
}

void add_no_repack_flag(CLI::App* cmd, bool& no_repack) {
  cmd->add_flag("--no-repack", no_repack,
                "keep all weights in the file mapping (zero copy) instead of repacking matmul weights for the "
                "CPU kernels (slower)");
}

void add_kv_type_flags(CLI::App* cmd, std::string& k_type, std::string& v_type) {
  const std::string names = kv_type_names();
  cmd->add_option("--cache-type-k", k_type, "KV cache type for K (-ctk): " + names)->capture_default_str();
  cmd->add_option("--cache-type-v", v_type, "KV cache type for V (-ctv): " + names)->capture_default_str();
}

void add_gpu_layers_flag(CLI::App* cmd, int& gpu_layers, const char* flag) {
  cmd->add_option(flag, gpu_layers,
                  "layers on the CUDA device (-ngl as llama.cpp; 0: CPU only; default: all when a device is present)")
      ->check(CLI::Range(0, 100000));
}

}  // namespace ember::cli
