// Helpers for the end-to-end tests of `ember perplexity` and `ember bench`: run the ember
// binary, capture its output, and convert the shared aidreams260K llama2.c checkpoint once
// per test process.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace ember_test {

struct CommandResult {
  int exit_code = -1;
  std::string out;   // stdout
  std::string err;   // stderr
};

// Runs `args` (a shell-quoted argument string) with the ember binary.
inline CommandResult run_ember(const std::string& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path err_path = fs::temp_directory_path() / ("ember_test_err_" + std::to_string(getpid()) + "_" +
                                                         std::to_string(counter++));
  const std::string cmd = std::string("'") + EMBER_BINARY + "' " + args + " 2>'" + err_path.string() + "'";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = fopen(err_path.c_str(), "rb")) {
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.err.append(buf, n);
    fclose(f);
  }
  fs::remove(err_path);
  return r;
}

// A scratch directory removed at exit.
inline const std::filesystem::path& scratch_dir() {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ember_test_" + std::to_string(getpid()));
    fs::create_directories(d);
    std::atexit([] { std::error_code ec; fs::remove_all(fs::temp_directory_path() / ("ember_test_" + std::to_string(getpid())), ec); });
    return d;
  }();
  return dir;
}

// aidreams260K converted to GGUF with `ember convert llama2c` (empty string on failure; the
// caller REQUIREs it, printing the converter's output).
inline const std::string& aidreams_gguf(std::string* log = nullptr) {
  static std::string path;
  static std::string convert_log;
  if (path.empty()) {
    const std::string out = (scratch_dir() / "aidreams260K.gguf").string();
    const std::string shared = EMBER_SHARED_DIR;
    const CommandResult r = run_ember("convert llama2c '" + shared + "/models/aidreams260K.bin' '" + shared +
                                      "/models/tok512.bin' -o '" + out + "'");
    convert_log = r.out + r.err;
    if (r.exit_code == 0 && std::filesystem::exists(out)) path = out;
  }
  if (log) *log = convert_log;
  return path;
}

}  // namespace ember_test
