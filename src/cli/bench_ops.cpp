// Placeholder: the `bench-ops` subcommand is not implemented yet (owner replaces this file).
#include "cli/commands.h"
namespace ember::cli {
void add_bench_ops(CLI::App& app) { (void)app; }
}  // namespace ember::cli
