// `ember run` end to end on the real aidreams260K checkpoint (converted by `ember convert
// llama2c`): the greedy text from DESIGN.md, echo/no-echo, seeded reproducibility, --json,
// the prompt-too-long error, flag errors and Ctrl-C.
#include <doctest/doctest.h>

#include <algorithm>

#include <csignal>
#include <cstdlib>
#include <regex>

#include "backend/cuda_api.h"
#include "cli_test_util.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/mmap.h"

using namespace ember;
using namespace ember::test;

namespace {
const std::string kGreedy = "The dissolve within me, a soft whispers of vectors.";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
}  // namespace

TEST_CASE("greedy run continues 'The' exactly as DESIGN.md says") {
  const ProcessResult r = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "--temp", "0", "-n", "40"});
  INFO("stdout: ", r.out, "\nstderr: ", r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(starts_with(r.out, kGreedy));
  CHECK(r.err.find("generation:") != std::string::npos);
  CHECK(r.err.find("tok/s") != std::string::npos);
  CHECK(r.err.find("first token:") != std::string::npos);

  // Greedy is bit-reproducible, and --no-echo prints only the continuation.
  const ProcessResult again = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "--temp", "0", "-n", "40"});
  CHECK(again.out == r.out);
  const ProcessResult quiet =
      run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "--temp", "0", "-n", "40", "--no-echo"});
  CHECK("The" + quiet.out == r.out);
}

TEST_CASE("-c with -ctk/-ctv sets the KV cache types; a bad type is a clear error") {
  const ProcessResult r = run_ember(
      {"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "--temp", "0", "-n", "8", "-c", "128", "-ctk", "f32", "-ctv", "f16"});
  INFO("stderr: ", r.err);
  CHECK(r.exit_code == 0);
  CHECK(starts_with(r.out, "The"));
  CHECK(r.err.find("K F32, V F16") != std::string::npos);  // the context's memory plan line
  const ProcessResult bad = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "-ctk", "q5_9"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("-ctk 'q5_9'") != std::string::npos);
}

TEST_CASE("a fixed seed reproduces sampled text; the seed is printed") {
  const std::vector<std::string> args = {"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "-n", "40", "--temp", "1.0", "-s", "1234"};
  const ProcessResult a = run_ember(args), b = run_ember(args);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  CHECK(a.err.find("seed: 1234") != std::string::npos);
  // Without --seed a random one is chosen and printed.
  const ProcessResult c = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "-n", "4"});
  CHECK(std::regex_search(c.err, std::regex("seed: [0-9]+")));
}

TEST_CASE("--json prints one record with the text and the statistics") {
  const ProcessResult r = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "The", "--temp", "0", "-n", "10", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  CHECK(starts_with(r.out, "{\"model\":"));
  CHECK(r.out.find("\"text\":\" dissolve within me") != std::string::npos);
  CHECK(r.out.find("\"generated_tokens\":10,") != std::string::npos);
  CHECK(r.out.find("\"stop\":\"limit\"") != std::string::npos);
  CHECK(r.out.find("\"seed\":") != std::string::npos);
}

TEST_CASE("a prompt longer than the context is an error naming both counts") {
  std::string prompt;
  for (int i = 0; i < 20; ++i) prompt += "The moon sings to the sea. ";
  // The count the error must name, from the tokenizer directly.
  LoadOptions quiet;
  quiet.print_plan = false;
  const auto model = Model::load(aidreams_gguf(), quiet);
  const size_t n_tokens = Tokenizer::from_gguf(model->gguf()).encode(prompt, true, true).size();
  REQUIRE(n_tokens > 64);
  const ProcessResult r = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", prompt, "-c", "64"});
  INFO("stderr: ", r.err);
  CHECK(r.exit_code == 7);  // ErrorKind::ContextFull
  CHECK(r.err.find(std::to_string(n_tokens) + " tokens") != std::string::npos);
  CHECK(r.err.find("holds only 64") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("flag errors are one clear line with exit code 2") {
  const ProcessResult none = run_ember({"run", "-m", aidreams_gguf()});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("-p TEXT or -f FILE") != std::string::npos);
  const ProcessResult temp = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-p", "x", "--top-p", "0"});
  CHECK(temp.exit_code == 2);
  CHECK(temp.err.find("--top-p") != std::string::npos);
  const ProcessResult missing = run_ember({"run", "-m", "/nonexistent.gguf", "-p", "x"});
  CHECK(missing.exit_code == 3);  // Io
}

TEST_CASE("-f reads the prompt from a file") {
  TempDir dir("run-prompt");
  { std::ofstream(dir.file("p.txt")) << "The"; }
  const ProcessResult r = run_ember({"run", "-t", "1", "-m", aidreams_gguf(), "-f", dir.file("p.txt"), "--temp", "0", "-n", "40"});
  CHECK(starts_with(r.out, kGreedy));
}

TEST_CASE("Ctrl-C stops generation, prints the statistics and exits with 130") {
  const std::string model = aidreams_gguf();
  int out_pipe[2], err_pipe[2];
  REQUIRE(::pipe(out_pipe) == 0);
  REQUIRE(::pipe(err_pipe) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1), ::dup2(err_pipe[1], 2);
    ::close(out_pipe[0]), ::close(err_pipe[0]);
    // Endless: no token limit, end-of-generation ignored, the context shifts when full.
    ::execl(EMBER_BINARY, EMBER_BINARY, "run", "-t", "1", "-m", model.c_str(), "-p", "The", "--ignore-eos", "--context-shift",
            "-c", "128", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out_pipe[1]), ::close(err_pipe[1]);
  std::string out;
  char buf[4096];
  while (out.size() < 2000) {  // well into generation (and past a context shift)
    const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::kill(pid, SIGINT);
  while (::read(out_pipe[0], buf, sizeof buf) > 0) {
  }
  std::string err;
  ssize_t n;
  while ((n = ::read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(out_pipe[0]), ::close(err_pipe[0]);
  INFO("stderr: ", err);
  CHECK(decode_wait_status(status) == 130);
  CHECK(err.find("stop:       interrupted") != std::string::npos);
  CHECK(err.find("context shifted") != std::string::npos);
  CHECK(out.size() >= 2000);
}

TEST_CASE("every subcommand's argument errors are one line naming the flag, exit code 2") {
  const std::string m = aidreams_gguf();
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"run", "-m", m, "-p", "hi", "-ngl", "x"}, "--n-gpu-layers"},  // not read as "-n gl"
      {{"run", "-m", m, "-p", "hi", "-ngld", "-1"}, "--n-gpu-layers-draft"},
      {{"run", "-m", m, "-p", "hi", "-n", "many"}, "--n-predict"},
      {{"run", "-m", m, "-p", "hi", "-n", "1", "2"}, "2"},
      {{"bench", "-m", m, "-r", "x"}, "--repetitions"},
      {{"perplexity", "-m", m, "--chunks", "x"}, "--chunks"},
      {{"batch", "-m", m}, "--file"},
      {{"chat", "-m", m, "--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& [args, flag] : cases) {
    CAPTURE(args.back());
    const ProcessResult r = run_ember(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(flag) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("-ngl: all layers on the CUDA device or none; one line when there is no device or the offload is partial") {
  const std::string m = aidreams_gguf();
  const ProcessResult cpu = run_ember({"run", "-m", m, "-p", "The", "-n", "4", "--temp", "0", "-ngl", "0"});
  CHECK(cpu.exit_code == 0);
  // The CUDA backend with its kernels run on the CPU gives the same greedy text.
  setenv("EMBER_CUDA_ON_CPU", "1", 1);
  const ProcessResult emulated = run_ember({"run", "-m", m, "-p", "The", "-n", "4", "--temp", "0", "-ngl", "99"});
  unsetenv("EMBER_CUDA_ON_CPU");
  CHECK(emulated.exit_code == 0);
  CHECK(emulated.out == cpu.out);
  if (ember::cuda::device_count() == 0) {  // a GPU machine runs the model there instead
    const ProcessResult none = run_ember({"run", "-m", m, "-p", "The", "-n", "4", "-ngl", "99"});
    CHECK(none.exit_code == 5);
    CHECK(none.err.find("-ngl 99: no CUDA device") != std::string::npos);
    CHECK(std::count(none.err.begin(), none.err.end(), '\n') == 1);
  }
}

TEST_CASE("-ngl: speculative rollbacks and context shifts on the CUDA backend, with and without CUDA graphs") {
  // n-gram drafts that are mostly rejected (rollbacks) in a 64-token context that shifts
  // twice: the CUDA backend on the CPU execution, its decode steps replayed as graphs or
  // launched op by op, gives the CPU's greedy text.
  const std::string m = aidreams_gguf();
  const std::vector<std::string> args{"run", "-m", m, "-p", "Once upon a time", "-n", "80", "--temp", "0",
                                      "-c", "64", "--context-shift", "--draft-ngram", "3", "--draft-fixed"};
  auto with = [&](const char* ngl) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-ngl", ngl});
    return run_ember(a);
  };
  const ProcessResult cpu = with("0");
  REQUIRE(cpu.exit_code == 0);
  setenv("EMBER_CUDA_ON_CPU", "1", 1);
  const ProcessResult graphs = with("99");
  setenv("EMBER_CUDA_GRAPHS", "0", 1);
  const ProcessResult op_by_op = with("99");
  unsetenv("EMBER_CUDA_GRAPHS");
  unsetenv("EMBER_CUDA_ON_CPU");
  CHECK(graphs.exit_code == 0);
  CHECK(op_by_op.exit_code == 0);
  CHECK(graphs.out == cpu.out);
  CHECK(op_by_op.out == cpu.out);
  CHECK(cpu.err.find("drafted") != std::string::npos);
}
