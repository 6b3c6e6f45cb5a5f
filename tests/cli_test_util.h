// Helpers of the `run` / `chat` end-to-end tests: the aidreams260K llama2.c checkpoint
// converted once per test process with `ember convert llama2c`, and running ember as a
// child process with captured output.
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "convert_test_util.h"

namespace ember::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs EMBER_BINARY with `args`, feeding `input` on stdin (a file, so not a terminal). With
// a `limit`, a child still running after it is killed (exit_code 128 + SIGKILL).
inline ProcessResult run_ember(const std::vector<std::string>& args, const std::string& input = {},
                               std::chrono::milliseconds limit = std::chrono::milliseconds::zero()) {
  static TempDir io("cli-io");
  static int n = 0;
  const std::string base = io.file(std::to_string(n++));
  { std::ofstream(base + ".in", std::ios::binary) << input; }
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open((base + ".in").c_str(), O_RDONLY);
    const int out = ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(EMBER_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(EMBER_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (limit > std::chrono::milliseconds::zero()) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } else {
    ::waitpid(pid, &status, 0);
  }
  return {decode_wait_status(status), slurp(base + ".out"), slurp(base + ".err")};
}

// aidreams260K (dim 64, 4 layers, vocab 512) as GGUF, converted once per process.
inline const std::string& aidreams_gguf() {
  static TempDir dir("aidreams");
  static const std::string path = [] {
    const std::string out = dir.file("aidreams260K.gguf");
    const ProcessResult r = run_ember({"convert", "llama2c", shared_path("models/aidreams260K.bin"),
                                       shared_path("models/tok512.bin"), "-o", out});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "convert failed (%d): %s\n", r.exit_code, r.err.c_str());
      std::abort();
    }
    return out;
  }();
  return path;
}

}  // namespace ember::test
