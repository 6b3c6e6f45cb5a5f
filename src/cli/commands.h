// Each subcommand lives in its own file under src/cli/ and registers itself on the app.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace ember::cli {

// Runs a subcommand body, mapping ember::Error and other exceptions to one line on stderr
// and the exit code of the error kind (see util/error.h). Returns the exit code.
int guarded(const char* command, const std::function<int()>& body);

// Stores the exit code a subcommand's callback produced, read by main().
void set_exit_code(int code);
int exit_code();

std::string version_string();

void add_inspect(CLI::App& app);

}  // namespace ember::cli
