// ember: one binary, one subcommand per file under src/cli/.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: run LLMs from GGUF files on the CPU or an NVIDIA GPU"};
  app.set_version_flag("--version", ember::cli::version_string());
  app.require_subcommand(1);
  app.fallthrough(false);

  ember::cli::add_inspect(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return ember::cli::exit_code();
}
