// `ember inspect` end to end: the real binary (EMBER_BINARY) on good and bad files.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("ember_test_inspect_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs `ember ARGS` with stdout and stderr captured separately.
Run run_ember(const std::string& args) {
  const auto dir = temp_dir();
  const std::string err_path = (dir / "stderr.txt").string();
  const std::string cmd = std::string("'") + EMBER_BINARY + "' " + args + " 2>'" + err_path + "'";
  Run r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = ember::read_text_file(err_path);
  return r;
}

std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

// Layout: header 24 + key/values 165 + tensor infos 107 = 296 bytes, padded to 320 where the
// data starts; token_embd.weight 272 bytes (padded to 288), output_norm.weight 256: 864 bytes.
std::vector<uint8_t> small_model() {
  ember::gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_array_string("tokenizer.ggml.tokens", {"<unk>", "a\"b", "line\nbreak"});
  w.add_tensor("token_embd.weight", ember::DType::Q8_0, {64, 4}, [](std::span<uint8_t>) {});
  w.add_tensor("output_norm.weight", ember::DType::F32, {64}, [](std::span<uint8_t>) {});
  return w.to_bytes();
}

}  // namespace

TEST_CASE("inspect on a malformed file prints one error line and exits with the format code") {
  auto bytes = small_model();
  bytes.resize(bytes.size() - 100);  // cut into output_norm.weight's data
  const std::string path = write_file("truncated.gguf", bytes);
  const Run r = run_ember("inspect '" + path + "'");
  CHECK(r.exit_code == ember::exit_code_for(ember::ErrorKind::Format));
  CHECK(r.out.empty());
  CHECK(r.err == "ember inspect: " + path +
                     ": tensor 'output_norm.weight': data [offset 288, 256 bytes] runs past end of file (data "
                     "section at 320, file 764 bytes)\n");
}

TEST_CASE("inspect on a missing file is an I/O error") {
  const Run r = run_ember("inspect /nonexistent/model.gguf");
  CHECK(r.exit_code == ember::exit_code_for(ember::ErrorKind::Io));
  CHECK(r.err == "ember inspect: /nonexistent/model.gguf: cannot open: No such file or directory\n");
}

TEST_CASE("inspect lists header, metadata, tensors and totals") {
  const std::string path = write_file("small.gguf", small_model());
  const Run r = run_ember("inspect '" + path + "'");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("GGUF v3: 3 key/values, 2 tensors, alignment 32, data section at byte 320, file 864 bytes") !=
        std::string::npos);
  CHECK(r.out.find(R"(array[string] 3: ["<unk>", "a\"b", "line\nbreak"])") != std::string::npos);
  CHECK(r.out.find("token_embd.weight   Q8_0     64 x 4") != std::string::npos);
  // 64*4 Q8_0 (8 blocks of 34 bytes) + 64 F32 = 272 + 256 bytes for 320 weights.
  CHECK(r.out.find("totals: 2 tensors (F32 1, Q8_0 1), 320 parameters, 528 bytes of tensor data, 13.20 bits per weight") !=
        std::string::npos);
}

TEST_CASE("inspect --json is valid JSON with the same facts") {
  const std::string path = write_file("small.gguf", small_model());
  const Run r = run_ember("inspect --json --items 2 '" + path + "'");
  REQUIRE(r.exit_code == 0);
  const ember::json::Value doc = ember::json::parse(r.out, "inspect --json");
  CHECK(doc.at("version").get<int64_t>() == 3);
  CHECK(doc.at("data_offset").get<int64_t>() == 320);
  const auto& meta = ember::json::as_array(doc.at("metadata"));
  REQUIRE(meta.size() == 3);
  const auto& tokens = meta[1].at("value");
  CHECK(tokens.at("length").get<int64_t>() == 3);
  REQUIRE(tokens.at("first").size() == 2);
  CHECK(tokens.at("first").at(1).get<std::string>() == "a\"b");
  const auto& tensors = ember::json::as_array(doc.at("tensors"));
  REQUIRE(tensors.size() == 2);
  CHECK(tensors[1].at("name").get<std::string>() == "output_norm.weight");
  CHECK(tensors[1].at("offset").get<int64_t>() == 288);
  CHECK(tensors[1].at("file_offset").get<int64_t>() == 320 + 288);
  CHECK(tensors[1].at("bytes").get<int64_t>() == 256);
  CHECK(doc.at("totals").at("parameters").get<int64_t>() == 320);
  CHECK(doc.at("totals").at("tensors_per_type").at("Q8_0").get<int64_t>() == 1);
}

TEST_CASE("inspect reads every vocabulary file") {
  for (const auto& entry : std::filesystem::directory_iterator(EMBER_SHARED_DIR "/vocab")) {
    if (entry.path().extension() != ".gguf") continue;
    CAPTURE(entry.path().string());
    const Run r = run_ember("inspect --json '" + entry.path().string() + "'");
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    const ember::json::Value doc = ember::json::parse(r.out, entry.path().string());
    const ember::gguf::File f = ember::gguf::File::open(entry.path().string());
    CHECK(doc.at("metadata").size() == f.metadata().size());
    CHECK(doc.at("tensors").empty());
  }
  std::filesystem::remove_all(temp_dir());
}
