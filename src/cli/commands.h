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
void add_tokenize(CLI::App& app);
void add_template(CLI::App& app);
void add_run(CLI::App& app);
void add_batch(CLI::App& app);
void add_serve(CLI::App& app);  // when built with the HTTP server (EMBER_HAVE_SERVER)
void add_chat(CLI::App& app);
void add_perplexity(CLI::App& app);
void add_bench(CLI::App& app);
void add_bench_ops(CLI::App& app);
void add_bench_grammar(CLI::App& app);
void add_convert(CLI::App& app);
void add_quantize(CLI::App& app);
void add_synth(CLI::App& app);
void add_bench_serve(CLI::App& app);

}  // namespace ember::cli
