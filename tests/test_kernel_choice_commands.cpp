// Every command that runs a model chooses its kernels for the types it reads: `perplexity`
// and a `--draft` model whose types the target lacks included (kernel_choice_setup.h). Run
// as a user would, with EMBER_KERNEL_CHOICE=auto and a fresh cache folder, the cache file
// must then list each of those types.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_choice.h"
#include "backend/cpu/kernel_choice_cache.h"
#include "cli_test_util.h"
#include "convert/llama2c.h"
#include "quantize/quantize_file.h"
#include "util/thread_pool.h"

using namespace ember;
using namespace ember::test;

namespace {

// The environment a user has: no EMBER_KERNEL_CHOICE (ctest sets widest), the cache under
// a folder of the test's own. Restored at the end of the test.
struct UserCacheEnv {
  TempDir dir{"kernel-choice-commands"};
  std::string saved_choice, saved_xdg;
  bool had_choice = false, had_xdg = false;
  UserCacheEnv() {
    if (const char* c = std::getenv("EMBER_KERNEL_CHOICE")) had_choice = true, saved_choice = c;
    if (const char* x = std::getenv("XDG_CACHE_HOME")) had_xdg = true, saved_xdg = x;
    ::setenv("EMBER_KERNEL_CHOICE", "auto", 1);
    ::setenv("XDG_CACHE_HOME", dir.path().string().c_str(), 1);
  }
  ~UserCacheEnv() {
    had_choice ? ::setenv("EMBER_KERNEL_CHOICE", saved_choice.c_str(), 1) : ::unsetenv("EMBER_KERNEL_CHOICE");
    had_xdg ? ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  }
  std::vector<DType> cached_types(int threads) const {
    const cpu::CachedSpeeds c = cpu::read_kernel_cache(dir.path().string() + "/ember/kernel-choice.json",
                                                       cpu::current_kernel_cache_key(threads));
    std::vector<DType> types;
    for (const cpu::TypeSpeeds& t : c.types) types.push_back(t.type);
    return types;
  }
};

bool table_applies() { return cpu::kernel_choice_applies(); }

bool has(const std::vector<DType>& types, DType t) { return std::find(types.begin(), types.end(), t) != types.end(); }

// aidreams260K as q8_0 (every matrix Q8_0) and q4_0 (Q4_0, its tied embeddings Q8_0).
struct TwoQuants {
  TempDir dir{"kernel-choice-models"};
  std::string q4 = dir.file("q4_0.gguf"), q8 = dir.file("q8_0.gguf");
  TwoQuants() {
    ThreadPool pool(2);
    const std::string f32 = dir.file("f32.gguf");
    convert::convert_llama2c(shared_path("models/aidreams260K.bin"), shared_path("models/tok512.bin"), f32,
                             DType::F32, &pool);
    quantize::quantize_file(f32, q4, quantize::parse_file_type("q4_0"), &pool);
    quantize::quantize_file(f32, q8, quantize::parse_file_type("q8_0"), &pool);
  }
};

}  // namespace

TEST_CASE("perplexity and a draft model choose kernels for their own types") {
  if (!table_applies()) {
    MESSAGE("no AVX2 here (or EMBER_SIMD keeps the CPU below its level): nothing to choose");
    return;
  }
  const TwoQuants files;
  {
    UserCacheEnv env;
    const std::string text = env.dir.file("text.txt");
    std::ofstream(text) << "Once upon a time there was a little girl who liked to play in the park with her dog. "
                           "One day the sun was bright and the birds sang in the tall trees by the pond.\n";
    const ProcessResult r = run_ember({"perplexity", "-m", files.q8, "-f", text, "-c", "16", "-t", "2"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(has(env.cached_types(2), DType::Q8_0));
  }
  {
    UserCacheEnv env;
    const ProcessResult r = run_ember({"run", "-m", files.q8, "--draft", files.q4, "-p", "Once upon a time", "-n", "8",
                                       "--temp", "0", "-t", "2", "--no-echo"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::vector<DType> types = env.cached_types(2);
    CHECK(has(types, DType::Q8_0));  // the target's (all its matrices)
    CHECK(has(types, DType::Q4_0));  // the draft's, which the target does not have
  }
}
