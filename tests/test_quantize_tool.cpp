// `ember quantize`: every target type round-trips within its error bound, the output passes
// the reader and the layout invariants, metadata is carried over, and the per-tensor type
// choice matches what llama.cpp chose in real Q4_K_M files (tests/data/convert/mix_*.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "util/thread_pool.h"
#include "convert_test_util.h"
#include "gguf/gguf_writer.h"
#include "quantize/mix.h"
#include "quantize/quantize_file.h"
#include "util/error.h"

using namespace ember;

namespace {

constexpr int kLayers = 8;

// A small llama-shaped F32 file: rows of 256 (k-quant friendly) and of 96 (k-quants must fall
// back), 1-D norms, a separate output matrix. Values ~ N(0, 1) times a per-tensor scale.
struct Source {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<int64_t>> shapes;
};

Source write_source(const std::string& path, DType type = DType::F32) {
  Source s;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", kLayers);
  w.set_string("general.name", "quantize-test");
  w.set_array_f32("test.some_array", std::vector<float>{1.5f, -2.0f});
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = scale * normal(rng);
    if (shape.size() == 1)
      for (float& x : v) x += 1.0f;  // norm-like
    s.values[name] = v;
    s.shapes[name] = shape;
    const float* data = s.values[name].data();
    const int64_t row = shape[0];
    w.add_tensor(name, type, shape, [data, n, row, type](std::span<uint8_t> out) {
      for (int64_t r = 0; r < n / row; ++r)
        quantize_row_reference(type, data + r * row, out.data() + r * dtype_row_bytes(type, row), row);
    });
  };
  add("token_embd.weight", {256, 64}, 0.02f);
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", {256}, 0.1f);
    add(b + "attn_v.weight", {256, 32}, 0.05f);
    add(b + "ffn_down.weight", {96, 256}, 0.05f);  // 96 columns: no 256-block fits
  }
  add("output_norm.weight", {256}, 0.1f);
  add("output.weight", {256, 64}, 0.02f);
  w.write(path);
  return s;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0, r = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    e += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    r += static_cast<double>(want[i]) * want[i];
  }
  return e / r;
}

// Upper bounds of the round-trip NMSE for normal data, about twice what the reference
// quantizers reach (a b-bit uniform quantizer over ~[-2.5σ, 2.5σ] gives ~(5/2^b)^2/12).
double bound(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1e-6;
    case DType::BF16: return 2e-5;
    case DType::Q8_0: return 2e-4;
    case DType::Q6_K: return 2e-3;
    case DType::Q5_0: case DType::Q5_1: case DType::Q5_K: return 6e-3;
    case DType::Q4_0: case DType::Q4_1: case DType::Q4_K: return 2.5e-2;
    default: return 0;
  }
}

}  // namespace

TEST_CASE("quantize: every type round-trips within bounds and re-reads cleanly") {
  test::TempDir dir("quantize");
  const std::string src = dir.file("src.gguf");
  const Source source = write_source(src);
  ThreadPool pool(2);
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "q4_k_m",
                           "q5_k_m"}) {
    CAPTURE(name);
    const quantize::FileType ft = quantize::parse_file_type(name);
    const std::string out = dir.file(std::string(name) + ".gguf");
    const auto report = quantize::quantize_file(src, out, ft, &pool);
    const gguf::File f = gguf::File::open(out);
    std::string problem;
    test::check_written_gguf(f, &problem);
    CHECK(problem == "");
    CHECK(f.get_u32("general.file_type") == ft.llama_ftype);
    CHECK(f.get_string("general.name") == "quantize-test");
    CHECK(f.get_array("test.some_array").float_at(1) == -2.0);
    REQUIRE(f.tensors().size() == source.values.size());
    CHECK(report.file_bytes == f.file_size());
    const quantize::TypePlan plan(ft, kLayers, true);
    for (size_t i = 0; i < f.tensors().size(); ++i) {
      const gguf::TensorInfo& t = f.tensors()[i];
      const std::string tname(t.name);
      CAPTURE(tname);
      CHECK(t.type == plan.type_for(tname, source.shapes.at(tname)));
      CHECK(report.tensors[i].to == t.type);
      const double e = nmse(test::tensor_values(t), source.values.at(tname));
      CHECK(e <= bound(t.type));
      CHECK(report.tensors[i].nmse == doctest::Approx(e).epsilon(1e-6).scale(1e-12));
    }
    uint64_t weights = 0;
    for (const auto& [n, v] : source.values) weights += v.size();
    CHECK(report.n_params == weights);
    CHECK(report.bits_per_weight() == doctest::Approx(8.0 * report.bytes_out / weights));
  }
}

TEST_CASE("quantize: the mix rules give the types the plan documents") {
  const quantize::TypePlan m(quantize::parse_file_type("q4_k_m"), kLayers, true);
  // more_bits for 8 layers: first eighth (0), last eighth (7), every third from 1 (3, 6).
  for (int l = 0; l < kLayers; ++l) {
    const bool more = l == 0 || l == 3 || l == 6 || l == 7;
    CHECK(quantize::more_bits(l, kLayers) == more);
    CHECK(m.type_for("blk." + std::to_string(l) + ".attn_v.weight", {256, 32}) == (more ? DType::Q6_K : DType::Q4_K));
    CHECK(m.type_for("blk." + std::to_string(l) + ".attn_q.weight", {256, 256}) == DType::Q4_K);
  }
  CHECK(m.type_for("output.weight", {256, 64}) == DType::Q6_K);
  CHECK(m.type_for("token_embd.weight", {256, 64}) == DType::Q4_K);
  CHECK(m.type_for("blk.0.attn_norm.weight", {256}) == DType::F32);
  CHECK(m.type_for("blk.0.ffn_down.weight", {96, 256}) == DType::Q8_0);  // Q6_K cannot: Q8_0
  CHECK(m.type_for("blk.1.ffn_down.weight", {96, 256}) == DType::Q5_0);  // Q4_K cannot: Q5_0
  CHECK(m.type_for("blk.1.ffn_down.weight", {48, 256}) == DType::F16);   // neither fits
  const quantize::TypePlan tied(quantize::parse_file_type("q4_0"), kLayers, false);
  CHECK(tied.type_for("token_embd.weight", {256, 64}) == DType::Q6_K);
  CHECK(tied.type_for("blk.0.attn_v.weight", {256, 32}) == DType::Q4_0);
  const quantize::TypePlan q8(quantize::parse_file_type("q8_0"), kLayers, true);
  CHECK(q8.type_for("output.weight", {256, 64}) == DType::Q8_0);
  const quantize::TypePlan f16(quantize::parse_file_type("f16"), kLayers, true);
  CHECK(f16.type_for("output.weight", {256, 64}) == DType::F16);
  CHECK_THROWS_AS(quantize::parse_file_type("q3_k"), Error);
}

TEST_CASE("quantize: Q4_K_M type choice matches llama.cpp's on real models") {
  for (const char* golden : {"mix_gemma-3-270m-q4_k_m.txt", "mix_qwen2.5-coder-0.5b-instruct-q4_k_m.txt",
                             "mix_qwen2.5-coder-1.5b-instruct-q4_k_m.txt"}) {
    CAPTURE(golden);
    std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/tests/data/convert/" + golden);
    REQUIRE(in);
    std::string line, word;
    int n_layer = 0, has_output = 0, checked = 0;
    while (std::getline(in, line) && line.starts_with("#")) {}
    std::istringstream(line) >> word >> n_layer >> word >> has_output;
    REQUIRE(n_layer > 0);
    struct Row {
      std::string name, type;
      std::vector<int64_t> shape;
    };
    std::vector<Row> rows;
    std::vector<std::string> order;
    while (std::getline(in, line)) {
      std::istringstream s(line);
      Row r;
      s >> r.name >> r.type;
      for (int64_t d; s >> d;) r.shape.push_back(d);
      order.push_back(r.name);
      rows.push_back(std::move(r));
    }
    // These files list blk.10 before blk.2: llama.cpp's "i-th attn_v" is by file order.
    const quantize::TypePlan plan(quantize::parse_file_type("q4_k_m"), n_layer, has_output != 0, order);
    for (const Row& r : rows) {
      CAPTURE(r.name);
      CHECK(std::string(dtype_name(plan.type_for(r.name, r.shape))) == r.type);
      ++checked;
    }
    CHECK(checked > 200);
  }
}

TEST_CASE("quantize: re-quantizing reads F16 input, and same-type tensors are copied byte for byte") {
  test::TempDir dir("quantize");
  const std::string src = dir.file("src16.gguf");
  const Source source = write_source(src, DType::F16);
  ThreadPool pool(2);
  const auto q8 = quantize::quantize_file(src, dir.file("q8.gguf"), quantize::parse_file_type("q8_0"), &pool);
  CHECK(q8.tensors[0].from == DType::F16);
  CHECK(q8.tensors[0].to == DType::Q8_0);
  const auto again = quantize::quantize_file(dir.file("q8.gguf"), dir.file("q8b.gguf"),
                                             quantize::parse_file_type("q8_0"), &pool);
  const gguf::File a = gguf::File::open(dir.file("q8.gguf"));
  const gguf::File b = gguf::File::open(dir.file("q8b.gguf"));
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    CHECK(again.tensors[i].copied);  // Q8_0 stays Q8_0, F32 norms stay F32
    CHECK(std::memcmp(a.tensors()[i].data, b.tensors()[i].data, a.tensors()[i].nbytes) == 0);
  }
  CHECK_THROWS_AS(quantize::quantize_file(src, src, quantize::parse_file_type("q8_0"), &pool), Error);
}

TEST_CASE("quantize: the CLI prints per-tensor lines and a summary") {
  test::TempDir dir("quantize");
  const std::string src = dir.file("src.gguf");
  write_source(src);
  const std::string cmd = std::string(EMBER_BINARY) + " quantize " + src + " " + dir.file("out.gguf") +
                          " q4_k_m -t 2 > " + dir.file("log") + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream log(dir.file("log"));
  std::string text((std::istreambuf_iterator<char>(log)), {});
  CHECK(text.find("blk.0.attn_v.weight") != std::string::npos);
  CHECK(text.find("Q6_K") != std::string::npos);
  CHECK(text.find("nmse") != std::string::npos);
  CHECK(text.find("bits/weight") != std::string::npos);
  const std::string bad = std::string(EMBER_BINARY) + " quantize " + src + " " + dir.file("x.gguf") + " q3_x > " +
                          dir.file("log2") + " 2>&1";
  CHECK(WEXITSTATUS(std::system(bad.c_str())) == 2);
}
