// Placeholder: the `synth` subcommand is not implemented yet (owner replaces this file).
#include "cli/commands.h"
namespace ember::cli {
void add_synth(CLI::App& app) { (void)app; }
}  // namespace ember::cli
