// Placeholder: the `quantize` subcommand is not implemented yet (owner replaces this file).
#include "cli/commands.h"
namespace ember::cli {
void add_quantize(CLI::App& app) { (void)app; }
}  // namespace ember::cli
