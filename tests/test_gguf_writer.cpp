// GGUF writer -> reader round trips, the layout llama.cpp's loader insists on, copying
// metadata from real files, and the all-or-nothing file write.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace {

using ember::DType;
using ember::gguf::File;
using ember::gguf::KeyValue;
using ember::gguf::ValueType;
using ember::gguf::Writer;

// Tensor bytes that depend on the tensor and the position, so swapped or shifted data shows.
Writer::Fill pattern(uint8_t seed) {
  return [seed](std::span<uint8_t> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8));
  };
}

bool has_pattern(const uint8_t* p, uint64_t n, uint8_t seed) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != static_cast<uint8_t>(seed * 31 + i * 7 + (i >> 8))) return false;
  return true;
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("ember_test_gguf_writer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("every value type survives writer -> reader") {
  Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u8("t.u8", 200);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 60000);
  w.set_i16("t.i16", -30000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_i64("t.i64", -9000000000000000000ll);
  w.set_f32("t.f32", 0.1f);
  w.set_f64("t.f64", 0.1);
  w.set_bool("t.bool", true);
  w.set_string("t.empty", "");
  w.set_array_string("t.strings", {"<unk>", "", "\xE4\xBD\xA0\xE5\xA5\xBD", std::string("a\0b", 3)});
  const std::vector<float> f{1.0f, -0.5f, 3.25f};
  w.set_array_f32("t.floats", f);
  const std::vector<int32_t> i32{-1, 0, 7};
  w.set_array_i32("t.i32s", i32);
  const std::vector<uint32_t> u32{1, 4000000000u};
  w.set_array_u32("t.u32s", u32);
  const std::vector<int64_t> i64{-5, 1ll << 40};
  w.set_array_i64("t.i64s", i64);
  const std::vector<uint8_t> u8{0, 255};
  w.set_array_u8("t.u8s", u8);
  w.set_array_bool("t.bools", {true, false, true});
  w.set_u32("t.u32", 7);  // replacing keeps the first position

  const auto bytes = w.to_bytes();
  File r = File::parse(bytes, "mem.gguf");
  CHECK(r.version() == 3);
  CHECK(r.get_string("general.architecture") == "llama");
  CHECK(r.get_u32("t.u8") == 200);
  CHECK(r.get_i64("t.i8") == -100);
  CHECK(r.get_u32("t.u16") == 60000);
  CHECK(r.get_i64("t.i16") == -30000);
  CHECK(r.get_u32("t.u32") == 7);
  CHECK(r.get_i64("t.i32") == -2000000000);
  CHECK(r.get_u64("t.u64") == 18000000000000000000ull);
  CHECK(r.get_i64("t.i64") == -9000000000000000000ll);
  CHECK(r.get_f32("t.f32") == 0.1f);
  CHECK(r.find("t.f64")->f64 == 0.1);
  CHECK(r.get_bool("t.bool"));
  CHECK(r.get_string("t.empty").empty());
  const auto& s = r.get_array("t.strings");
  REQUIRE(s.size() == 4);
  CHECK(s.string_at(0) == "<unk>");
  CHECK(s.string_at(1) == "");
  CHECK(s.string_at(2) == "\xE4\xBD\xA0\xE5\xA5\xBD");
  CHECK(s.string_at(3) == std::string_view("a\0b", 3));
  const auto& fl = r.get_array("t.floats");
  CHECK(fl.element_type() == ValueType::F32);
  CHECK(fl.float_at(2) == 3.25);
  CHECK(r.get_array("t.i32s").int_at(0) == -1);
  CHECK(r.get_array("t.u32s").int_at(1) == 4000000000ll);
  CHECK(r.get_array("t.i64s").int_at(1) == (1ll << 40));
  CHECK(r.get_array("t.u8s").int_at(1) == 255);
  CHECK(r.get_array("t.bools").int_at(2) == 1);
  CHECK(r.get_array("t.bools").element_type() == ValueType::BOOL);

  // Keys in first-set order, then the implicit general.alignment (llama.cpp reads it as u32).
  REQUIRE(r.metadata().size() == 21);
  CHECK(r.metadata()[0].key == "general.architecture");
  CHECK(r.metadata()[5].key == "t.u32");
  CHECK(r.metadata().back().key == "general.alignment");
  CHECK(r.metadata().back().type == ValueType::U32);
  CHECK(r.alignment() == 32);
}

TEST_CASE("tensors keep their order, shapes and bytes, laid out as llama.cpp requires") {
  for (uint32_t alignment : {32u, 64u, 4096u}) {
    CAPTURE(alignment);
    Writer w;
    w.set_u32("general.alignment", alignment);
    w.add_tensor("token_embd.weight", DType::Q4_0, {64, 3}, pattern(1));  // 2 blocks x 18 B x 3 rows
    w.add_tensor("output_norm.weight", DType::F32, {5}, pattern(2));       // 20 bytes, odd size
    w.add_tensor("blk.0.attn_q.weight", DType::Q6_K, {256, 2, 1}, pattern(3));
    w.add_tensor("blk.0.x", DType::F16, {3, 1, 2, 2}, pattern(4));
    const auto bytes = w.to_bytes();
    File r = File::parse(bytes, "mem.gguf");
    CHECK(r.alignment() == alignment);
    CHECK(r.data_offset() % alignment == 0);
    REQUIRE(r.tensors().size() == 4);
    const char* names[] = {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.0.x"};
    const uint64_t sizes[] = {3 * 2 * 18, 20, 2 * 210, 3 * 2 * 2 * 2};
    // llama.cpp's loader rejects a file unless tensor i starts exactly at the padded sum of
    // the sizes before it, and it reads the padded size of the whole data section.
    uint64_t expected_offset = 0;
    for (size_t i = 0; i < 4; ++i) {
      const auto& t = r.tensors()[i];
      CAPTURE(i);
      CHECK(t.name == names[i]);
      CHECK(t.nbytes == sizes[i]);
      CHECK(t.offset == expected_offset);
      CHECK(has_pattern(t.data, t.nbytes, static_cast<uint8_t>(i + 1)));
      expected_offset += (t.nbytes + alignment - 1) / alignment * alignment;
    }
    CHECK(r.data_offset() + expected_offset == bytes.size());
    const auto* x = r.find_tensor("blk.0.x");
    CHECK(x->n_dims == 4);
    CHECK((x->ne[0] == 3 && x->ne[1] == 1 && x->ne[2] == 2 && x->ne[3] == 2));
    CHECK(r.find_tensor("blk.0.attn_q.weight")->n_dims == 3);
    CHECK(r.find_tensor("token_embd.weight")->type == DType::Q4_0);
  }
}

TEST_CASE("metadata copied from a real vocabulary file is identical after a round trip") {
  File src = File::open(EMBER_SHARED_DIR "/vocab/ggml-vocab-gpt-2.gguf");
  Writer w;
  w.copy_metadata(src, [](std::string_view key) { return key == "general.name"; });
  w.set_string("general.name", "copied");
  const auto bytes = w.to_bytes();
  File dst = File::parse(bytes, "copy.gguf");
  CHECK(dst.get_string("general.name") == "copied");
  size_t compared = 0;
  for (const KeyValue& a : src.metadata()) {
    if (a.key == "general.name") continue;
    CAPTURE(a.key);
    const KeyValue* b = dst.find(a.key);
    REQUIRE(b != nullptr);
    REQUIRE(a.type == b->type);
    CHECK(a.u64 == b->u64);
    CHECK(a.i64 == b->i64);
    CHECK(a.str == b->str);
    CHECK(a.b == b->b);
    if (a.type == ValueType::ARRAY) {
      REQUIRE(a.array.element_type() == b->array.element_type());
      REQUIRE(a.array.size() == b->array.size());
      for (uint64_t i = 0; i < a.array.size(); ++i) {
        if (a.array.element_type() == ValueType::STRING) {
          if (a.array.string_at(i) != b->array.string_at(i)) FAIL("string element " << i << " differs");
        } else if (a.array.float_at(i) != b->array.float_at(i)) {
          FAIL("element " << i << " differs");
        }
      }
    }
    ++compared;
  }
  CHECK(compared + 1 == src.metadata().size());
}

TEST_CASE("write() replaces the target only when everything was written") {
  const auto dir = temp_dir();
  const std::string path = (dir / "model.gguf").string();
  {
    std::ofstream old(path, std::ios::binary);
    old << "previous contents";
  }
  Writer failing;
  failing.set_string("general.architecture", "llama");
  failing.add_tensor("a", DType::F32, {4}, pattern(1));
  failing.add_tensor("b", DType::F32, {4}, [](std::span<uint8_t>) { throw std::runtime_error("quantizer failed"); });
  CHECK_THROWS_WITH(failing.write(path), "quantizer failed");
  CHECK(ember::read_text_file(path) == "previous contents");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  Writer ok;
  ok.set_string("general.architecture", "llama");
  ok.add_tensor("a", DType::F32, {4}, pattern(1));
  ok.write(path);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  File r = File::open(path);
  CHECK(r.get_string("general.architecture") == "llama");
  CHECK(has_pattern(r.find_tensor("a")->data, 16, 1));
  CHECK(std::filesystem::file_size(path) == ok.to_bytes().size());

  CHECK_THROWS_AS(ok.write((dir / "no_such_dir" / "x.gguf").string()), ember::Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("add_tensor refuses what the reader would refuse") {
  Writer w;
  auto fill = pattern(0);
  w.add_tensor("ok", DType::F32, {2}, fill);
  CHECK_THROWS_WITH_AS(w.add_tensor("ok", DType::F32, {2}, fill), "gguf writer: tensor 'ok': duplicate tensor name",
                       ember::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor(std::string(64, 'x'), DType::F32, {2}, fill),
                       doctest::Contains("name is 64 bytes long (limit 63)"), ember::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("q", DType::Q4_0, {48}, fill),
                       "gguf writer: tensor 'q': ne[0] = 48 is not a multiple of Q4_0's block size 32", ember::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("z", DType::F32, {4, 0}, fill),
                       "gguf writer: tensor 'z': dimension ne[1] = 0 (must be > 0)", ember::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("five", DType::F32, {1, 1, 1, 1, 1}, fill),
                       "gguf writer: tensor 'five': 5 dimensions (must be 1..4)", ember::Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("big", DType::F32, {1ll << 32, 1ll << 32}, fill),
                       "gguf writer: tensor 'big': element count overflows", ember::Error);
  CHECK(w.tensor_count() == 1);
  w.set_u32("general.alignment", 48);
  CHECK_THROWS_WITH_AS(w.to_bytes(), doctest::Contains("must be a u32 power of two"), ember::Error);
  w.set_string("general.alignment", "32");
  CHECK_THROWS_WITH_AS(w.to_bytes(), doctest::Contains("must be a u32"), ember::Error);
  w.remove("general.alignment");
  CHECK_FALSE(w.has("general.alignment"));
  CHECK(File::parse(w.to_bytes(), "x").alignment() == 32);
}

namespace {

// The fuzzer's seed files (tests/fuzz/seeds/), made by the writer. Committed so `make fuzz`
// needs no generation step; this test keeps them equal to what the writer produces (run with
// EMBER_UPDATE_FUZZ_SEEDS=1 to rewrite them after an intended format change).
std::vector<std::pair<std::string, std::vector<uint8_t>>> fuzz_seeds() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds;
  {
    Writer w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 1);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_i64("t.i64", -3);
    w.set_f64("t.f64", 2.5);
    w.add_tensor("token_embd.weight", DType::Q4_0, {32, 2}, pattern(1));
    w.add_tensor("output_norm.weight", DType::F32, {3}, pattern(2));
    w.add_tensor("blk.0.attn_q.weight", DType::Q8_0, {32, 1, 1, 1}, pattern(3));
    seeds.emplace_back("tiny_model.gguf", w.to_bytes());
  }
  {
    Writer w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_array_string("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0", "<s>"});
    const std::vector<float> scores{0, -1, -2, -3, 0};
    w.set_array_f32("tokenizer.ggml.scores", scores);
    const std::vector<int32_t> types{1, 1, 1, 1, 3};
    w.set_array_i32("tokenizer.ggml.token_type", types);
    w.set_array_string("tokenizer.ggml.merges", {"a b"});
    w.set_array_bool("t.bools", {true, false});
    seeds.emplace_back("vocab_only.gguf", w.to_bytes());
  }
  {
    Writer w;
    w.set_u32("general.alignment", 64);
    w.set_u16("t.u16", 9);
    w.add_tensor("a", DType::F16, {4, 2}, pattern(4));
    w.add_tensor("b", DType::Q6_K, {256}, pattern(5));
    auto bytes = w.to_bytes();
    bytes[4] = 2;  // version 2: same layout, exercises the v2 path
    seeds.emplace_back("v2_align64.gguf", bytes);
  }
  return seeds;
}

}  // namespace

TEST_CASE("the committed fuzz seeds are current writer output and parse") {
  const std::filesystem::path dir = EMBER_SOURCE_DIR "/tests/fuzz/seeds";
  const bool update = std::getenv("EMBER_UPDATE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, bytes] : fuzz_seeds()) {
    CAPTURE(name);
    CHECK_NOTHROW(File::parse(bytes, name));
    const auto path = dir / name;
    if (update) {
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::vector<uint8_t> committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(committed == bytes);
  }
}
