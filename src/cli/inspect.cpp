// placeholder until the GGUF helper lands `ember inspect`
#include "cli/commands.h"
namespace ember::cli {
void add_inspect(CLI::App& app) { (void)app; }
}  // namespace ember::cli
