// Loading: tensor shape/type checks name the tensor, unknown architectures are refused.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "models/model_support.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::vector<uint8_t>& bytes, const char* name) {
  const std::string path = std::string("/tmp/ember_test_") + name + "_" + std::to_string(::getpid()) + ".gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

// Finds a tensor-info record by name (u64 length + name, then u32 n_dims, u64 ne[]) and
// returns the offset of its ne[dim].
size_t ne_offset(const std::vector<uint8_t>& bytes, const std::string& name, int dim) {
  const std::string needle = name;
  for (size_t i = 8; i + needle.size() + 4 < bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, needle.data(), needle.size()) != 0) continue;
    uint64_t len;
    std::memcpy(&len, bytes.data() + i - 8, 8);
    if (len != needle.size()) continue;
    return i + needle.size() + 4 + 8 * dim;
  }
  throw std::runtime_error("tensor not found: " + name);
}

}  // namespace

TEST_CASE("a tensor with the wrong shape is named in the error") {
  std::vector<uint8_t> bytes = read_all(tiny_model("llama"));
  const size_t off = ne_offset(bytes, "blk.1.attn_k.weight", 1);
  uint64_t rows;
  std::memcpy(&rows, bytes.data() + off, 8);
  REQUIRE(rows == 64);
  rows = 32;  // the file now claims half the key rows (and smaller data, which still fits)
  std::memcpy(bytes.data() + off, &rows, 8);
  const std::string path = write_temp(bytes, "bad_shape");
  try {
    Model::load(path, quiet_load());
    FAIL("expected a shape error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    MESSAGE(msg);
    CHECK(e.kind() == ErrorKind::Format);
    CHECK(msg.find("blk.1.attn_k.weight") != std::string::npos);
    CHECK(msg.find("expected 64x64") != std::string::npos);
    CHECK(msg.find("64x32") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("an unknown architecture is refused with the known ones listed") {
  std::vector<uint8_t> bytes = read_all(tiny_model("qwen2"));
  // "qwen2" appears as the general.architecture value and in every key prefix; rename all.
  const std::string from = "qwen2", to = "qwenX";
  for (size_t i = 0; i + from.size() <= bytes.size(); ++i)
    if (std::memcmp(bytes.data() + i, from.data(), from.size()) == 0) std::memcpy(bytes.data() + i, to.data(), to.size());
  const std::string path = write_temp(bytes, "bad_arch");
  try {
    Model::load(path, quiet_load());
    FAIL("expected Unsupported");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("qwenX") != std::string::npos);
    CHECK(std::string(e.what()).find("llama, qwen2, qwen3, gemma3") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("a missing tensor is named") {
  std::vector<uint8_t> bytes = read_all(tiny_model("qwen3"));
  const std::string from = "blk.2.attn_q_norm.weight", to = "blk.2.attn_q_nrom.weight";
  for (size_t i = 0; i + from.size() <= bytes.size(); ++i)
    if (std::memcmp(bytes.data() + i, from.data(), from.size()) == 0) std::memcpy(bytes.data() + i, to.data(), to.size());
  const std::string path = write_temp(bytes, "missing");
  try {
    Model::load(path, quiet_load());
    FAIL("expected Format");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Format);
    CHECK(std::string(e.what()).find("blk.2.attn_q_norm.weight is missing") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("describe lists the tensor types and their sizes") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  const auto& file = model->gguf();
  CHECK(model->weight_bytes() > 100000);
  CHECK(model->weight_bytes() <= file.file_size());
  CHECK(model->describe().find("Q8_0") != std::string::npos);
}
