// Placeholder: the `perplexity` subcommand is not implemented yet (owner replaces this file).
#include "cli/commands.h"
namespace ember::cli {
void add_perplexity(CLI::App& app) { (void)app; }
}  // namespace ember::cli
