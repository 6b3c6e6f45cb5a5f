// Every vocabulary GGUF in ../shared/vocab, read by ember, must describe exactly what gguf-py
// (ggml's own Python reader) read from it: tests/test_gguf_vocab.golden holds one line per key
// made by tests/test_gguf_vocab_golden.py; here the same lines are rebuilt through ember's
// public accessors (int_at, float_at, string_at, get_*) and compared.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "util/error.h"

namespace {

using ember::gguf::ArrayView;
using ember::gguf::File;
using ember::gguf::KeyValue;
using ember::gguf::ValueType;

struct Fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  template <class T>
  void add_le(T v) { add(&v, sizeof v); }  // little-endian host (checked by the reader)
};

bool is_int_type(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
    case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
    case ValueType::BOOL:
      return true;
    default:
      return false;
  }
}

std::string describe_array(const ArrayView& a) {
  Fnv f;
  const ValueType t = a.element_type();
  for (uint64_t i = 0; i < a.size(); ++i) {
    if (t == ValueType::STRING) {
      std::string_view s = a.string_at(i);
      f.add_le<uint64_t>(s.size());
      f.add(s.data(), s.size());
    } else if (is_int_type(t)) {
      f.add_le<int64_t>(a.int_at(i));
    } else if (t == ValueType::F32) {
      f.add_le<float>(static_cast<float>(a.float_at(i)));
    } else {
      f.add_le<double>(a.float_at(i));
    }
  }
  return fmt::format("array[{}] len={} fnv={:016x}", value_type_name(t), a.size(), f.h);
}

std::string describe(const File& file, const KeyValue& kv) {
  const std::string key(kv.key);
  switch (kv.type) {
    case ValueType::STRING: {
      std::string_view s = file.get_string(key);
      Fnv f;
      f.add(s.data(), s.size());
      return fmt::format("string len={} fnv={:016x}", s.size(), f.h);
    }
    case ValueType::ARRAY: return describe_array(file.get_array(key));
    case ValueType::F32: return fmt::format("f32 {:#010x}", std::bit_cast<uint32_t>(file.get_f32(key)));
    case ValueType::F64: return fmt::format("f64 {:#018x}", std::bit_cast<uint64_t>(kv.f64));
    case ValueType::BOOL: return fmt::format("bool {}", file.get_bool(key) ? 1 : 0);
    case ValueType::U64: return fmt::format("u64 {}", file.get_u64(key));
    default: return fmt::format("{} {}", value_type_name(kv.type), file.get_i64(key));
  }
}

std::map<std::string, std::vector<std::string>> read_golden() {
  std::ifstream in(EMBER_SOURCE_DIR "/tests/test_gguf_vocab.golden");
  REQUIRE(in);
  std::map<std::string, std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) lines[line.substr(0, line.find('\t'))].push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("every vocab GGUF reads exactly as gguf-py reads it") {
  const std::filesystem::path dir = EMBER_SHARED_DIR "/vocab";
  REQUIRE(std::filesystem::is_directory(dir));
  auto golden = read_golden();
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    File f = File::open(entry.path().string());
    std::vector<std::string> mine;
    mine.push_back(fmt::format("{}\t#header\tversion={} n_tensors={} n_kv={}", name, f.version(),
                               f.tensors().size(), f.metadata().size()));
    for (const KeyValue& kv : f.metadata()) mine.push_back(fmt::format("{}\t{}\t{}", name, kv.key, describe(f, kv)));
    REQUIRE(golden.count(name) == 1);
    CHECK(mine == golden[name]);
    ++files;
  }
  CHECK(files == golden.size());
  CHECK(files >= 11);
}

TEST_CASE("vocabulary arrays give the tokens a tokenizer expects") {
  File f = File::open(EMBER_SHARED_DIR "/vocab/ggml-vocab-llama-spm.gguf");
  const ArrayView& tokens = f.get_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 32000);
  CHECK(tokens.string_at(0) == "<unk>");
  CHECK(tokens.string_at(1) == "<s>");
  CHECK(tokens.string_at(2) == "</s>");
  CHECK(tokens.string_at(3) == "<0x00>");
  CHECK(f.get_u32("tokenizer.ggml.bos_token_id") == 1);
  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  const ArrayView& scores = f.get_array("tokenizer.ggml.scores");
  CHECK(scores.size() == 32000);
  CHECK_THROWS_WITH_AS(tokens.string_at(32000), doctest::Contains("index 32000 out of range (length 32000)"),
                       ember::Error);
  CHECK_THROWS_WITH_AS(scores.string_at(0), doctest::Contains("elements are f32, not strings"), ember::Error);

  File g = File::open(EMBER_SHARED_DIR "/vocab/ggml-vocab-gpt-2.gguf");
  const ArrayView& merges = g.get_array("tokenizer.ggml.merges");
  CHECK(merges.size() == 50000);
  CHECK(merges.string_at(0) == "\xC4\xA0 t");  // "Ġ t": the first GPT-2 merge
}
