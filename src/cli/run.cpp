// Placeholder: the `run` subcommand is not implemented yet (owner replaces this file).
#include "cli/commands.h"
namespace ember::cli {
void add_run(CLI::App& app) { (void)app; }
}  // namespace ember::cli
