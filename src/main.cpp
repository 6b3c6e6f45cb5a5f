// ember: one binary, one subcommand per file under src/cli/.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"
#include "cli/llama_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: run LLMs from GGUF files on the CPU or an NVIDIA GPU"};
  app.set_version_flag("--version", ember::cli::version_string());
  app.footer(
      "Environment: EMBER_SIMD=scalar|avx2|avx512 caps the CPU kernels' instruction set; "
      "EMBER_KERNEL_CHOICE=auto|calibrate|widest: which packed kernel (AVX2 or AVX-512) runs per weight type "
      "and regime (decode, batch, prefill): auto measures once per CPU and caches it in "
      "$XDG_CACHE_HOME/ember/kernel-choice.json (~/.cache/ember/), calibrate measures again, widest skips "
      "measuring (see README, \"Weights in memory\").");
  app.require_subcommand(1);
  app.fallthrough(false);

  ember::cli::add_inspect(app);
  ember::cli::add_tokenize(app);
  ember::cli::add_template(app);
  ember::cli::add_run(app);
  ember::cli::add_batch(app);
  ember::cli::add_chat(app);
  ember::cli::add_perplexity(app);
  ember::cli::add_bench(app);
  ember::cli::add_bench_ops(app);
  ember::cli::add_bench_grammar(app);
  ember::cli::add_convert(app);
  ember::cli::add_quantize(app);
  ember::cli::add_synth(app);
#ifdef EMBER_HAVE_SERVER
  ember::cli::add_serve(app);
  ember::cli::add_bench_serve(app);
#endif

  std::vector<std::string> args = ember::cli::expand_llama_flags(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const std::string& a : args) arg_ptrs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; every argument error is one line, exit 2 (the
    // README's code for a bad argument), whichever check of the parser caught it.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "ember: %s\n", e.what());
    return 2;
  }
  return ember::cli::exit_code();
}
