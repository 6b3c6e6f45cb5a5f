// `ember convert llama2c`: the GGUF must hold the checkpoint's floats unchanged (llama2.c's
// run.c and llama GGUFs both rotate adjacent pairs, so no Q/K permutation applies), the
// tokenizer in SentencePiece GGUF form, and the model must continue "The" exactly as the
// numpy port of run.c does (tests/data/convert/aidreams260K_greedy.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/thread_pool.h"
#include "convert/llama2c.h"
#include "convert_test_util.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace ember;

namespace {

const std::string kModel = test::shared_path("models/aidreams260K.bin");
const std::string kTokenizer = test::shared_path("models/tok512.bin");

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The checkpoint read the plainest way: header, then the weight arrays in run.c's order.
struct PlainCheckpoint {
  int32_t h[7];
  std::vector<std::vector<float>> arrays;  // tok, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final
  explicit PlainCheckpoint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(h), sizeof h);
    const size_t dim = h[0], hid = h[1], L = h[2], heads = h[3], kvh = h[4], V = std::abs(h[5]);
    const size_t kv = dim / heads * kvh;
    for (size_t n : {V * dim, L * dim, L * dim * dim, L * dim * kv, L * dim * kv, L * dim * dim, L * dim,
                     L * dim * hid, L * hid * dim, L * dim * hid, dim}) {
      std::vector<float> a(n);
      in.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(n * 4));
      arrays.push_back(std::move(a));
    }
  }
};

std::vector<std::string> golden_lines() {
  std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/tests/data/convert/aidreams260K_greedy.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("#")) lines.push_back(line);
  return lines;
}

std::vector<int32_t> ints(const std::string& line) {
  std::istringstream s(line);
  std::vector<int32_t> v;
  for (int32_t x; s >> x;) v.push_back(x);
  return v;
}

}  // namespace

TEST_CASE("convert llama2c: hyperparameters, vocabulary and weights") {
  test::TempDir dir("convert");
  const std::string out = dir.file("aidreams.gguf");
  ThreadPool pool(2);
  const auto stats = convert::convert_llama2c(kModel, kTokenizer, out, DType::F32, &pool);
  CHECK(stats.n_tensors == 2 + 4 * 9);  // token_embd, output_norm, 9 per block; tied: no output.weight

  const gguf::File f = gguf::File::open(out);
  std::string problem;
  test::check_written_gguf(f, &problem);
  CHECK(problem == "");
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("llama.embedding_length") == 64);
  CHECK(f.get_u32("llama.feed_forward_length") == 172);
  CHECK(f.get_u32("llama.block_count") == 4);
  CHECK(f.get_u32("llama.attention.head_count") == 4);
  CHECK(f.get_u32("llama.attention.head_count_kv") == 4);
  CHECK(f.get_u32("llama.context_length") == 128);
  CHECK(f.get_u32("llama.rope.dimension_count") == 16);
  CHECK(f.get_f32("llama.attention.layer_norm_rms_epsilon") == doctest::Approx(1e-5));
  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  CHECK(f.get_u32("tokenizer.ggml.bos_token_id") == 1);
  CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 2);
  CHECK(f.get_u32("general.file_type") == 0);

  // Vocabulary: tokenizer.bin read independently here.
  const auto& tokens = f.get_array("tokenizer.ggml.tokens");
  const auto& scores = f.get_array("tokenizer.ggml.scores");
  const auto& types = f.get_array("tokenizer.ggml.token_type");
  REQUIRE(tokens.size() == 512);
  CHECK(tokens.string_at(0) == "<unk>");
  CHECK(tokens.string_at(1) == "<s>");
  CHECK(tokens.string_at(2) == "</s>");
  CHECK(types.int_at(0) == 2);   // unknown
  CHECK(types.int_at(1) == 3);   // control
  CHECK(types.int_at(3) == 6);   // <0x00>: byte
  CHECK(tokens.string_at(3 + 0x41) == "<0x41>");
  CHECK(types.int_at(3 + 256) == 1);
  const std::vector<uint8_t> tb = read_bytes(kTokenizer);
  size_t p = 4;
  int with_space = 0;
  for (uint64_t id = 0; id < 512; ++id) {
    float score;
    int32_t len;
    std::memcpy(&score, tb.data() + p, 4);
    std::memcpy(&len, tb.data() + p + 4, 4);
    std::string text(reinterpret_cast<const char*>(tb.data() + p + 8), static_cast<size_t>(len));
    p += 8 + static_cast<size_t>(len);
    CHECK(scores.float_at(id) == score);
    if (id < 3) continue;
    std::string expect;
    for (char c : text) expect += c == ' ' ? std::string("\xe2\x96\x81") : std::string(1, c);
    with_space += text.find(' ') != std::string::npos;
    CHECK(tokens.string_at(id) == expect);
  }
  CHECK(with_space > 50);  // the vocabulary really has space-prefixed pieces to escape

  // Weights: bit-identical to the checkpoint, rows = outputs, ne0 = inputs.
  const PlainCheckpoint ck(kModel);
  auto expect_tensor = [&](const std::string& name, const std::vector<float>& all, size_t index, int64_t ne0,
                           int64_t ne1) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    REQUIRE_MESSAGE(t, name);
    CHECK(t->type == DType::F32);
    CHECK(t->ne[0] == ne0);
    CHECK(t->ne[1] == ne1);
    const size_t n = static_cast<size_t>(ne0 * ne1);
    CHECK_MESSAGE(std::memcmp(t->data, all.data() + index * n, n * 4) == 0, name);
  };
  expect_tensor("token_embd.weight", ck.arrays[0], 0, 64, 512);
  expect_tensor("output_norm.weight", ck.arrays[10], 0, 64, 1);
  CHECK(f.find_tensor("output.weight") == nullptr);
  for (int l = 0; l < 4; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    expect_tensor(b + "attn_norm.weight", ck.arrays[1], l, 64, 1);
    expect_tensor(b + "attn_q.weight", ck.arrays[2], l, 64, 64);
    expect_tensor(b + "attn_k.weight", ck.arrays[3], l, 64, 64);
    expect_tensor(b + "attn_v.weight", ck.arrays[4], l, 64, 64);
    expect_tensor(b + "attn_output.weight", ck.arrays[5], l, 64, 64);
    expect_tensor(b + "ffn_norm.weight", ck.arrays[6], l, 64, 1);
    expect_tensor(b + "ffn_gate.weight", ck.arrays[7], l, 64, 172);
    expect_tensor(b + "ffn_down.weight", ck.arrays[8], l, 172, 64);
    expect_tensor(b + "ffn_up.weight", ck.arrays[9], l, 64, 172);
  }
}

TEST_CASE("convert llama2c: the converted model continues \"The\" like run.c") {
  test::TempDir dir("convert");
  const std::string out = dir.file("aidreams.gguf");
  convert::convert_llama2c(kModel, kTokenizer, out, DType::F32, nullptr);
  const auto golden = golden_lines();
  REQUIRE(golden.size() == 3);
  const std::vector<int32_t> prompt = ints(golden[1]);   // BOS " The" pieces
  const std::vector<int32_t> stream = ints(golden[2]);   // tokens at positions 1..N

  auto model = Model::load(out, {.print_plan = false});
  ThreadPool pool(1);
  Context ctx(*model, {.n_ctx = 128, .k_type = DType::F32, .v_type = DType::F32, .print_plan = false}, pool);
  std::vector<int32_t> fed = {prompt[0]};
  std::vector<int32_t> got;
  for (size_t pos = 0; pos < stream.size(); ++pos) {
    Batch b;
    b.add(fed.back(), static_cast<int32_t>(pos), 0, true);
    const auto logits = ctx.decode(b);
    int32_t best = 0;
    for (int32_t i = 1; i < static_cast<int32_t>(logits.size()); ++i)
      if (logits[i] > logits[best]) best = i;
    const int32_t next = pos + 1 < prompt.size() ? prompt[pos + 1] : best;
    got.push_back(next);
    fed.push_back(next);
  }
  CHECK(got == stream);

  const gguf::File f = gguf::File::open(out);
  const Tokenizer tok = Tokenizer::from_gguf(f);
  CHECK(tok.encode("The", true, false) == prompt);
  CHECK(tok.decode(got) == golden[0]);
  CHECK(golden[0].starts_with("The dissolve within me, a soft whispers of vectors."));
}

TEST_CASE("convert llama2c: quantized output stays close to the checkpoint") {
  test::TempDir dir("convert");
  const std::string out = dir.file("aidreams-q8.gguf");
  ThreadPool pool(2);
  convert::convert_llama2c(kModel, kTokenizer, out, DType::Q8_0, &pool);
  const gguf::File f = gguf::File::open(out);
  CHECK(f.get_u32("general.file_type") == 7);
  const PlainCheckpoint ck(kModel);
  const gguf::TensorInfo* q = f.find_tensor("blk.2.attn_q.weight");
  REQUIRE(q);
  CHECK(q->type == DType::Q8_0);
  CHECK(f.find_tensor("blk.2.ffn_down.weight")->type == DType::F16);  // 172 columns: no Q8_0 block fits
  CHECK(f.find_tensor("blk.2.attn_norm.weight")->type == DType::F32);
  const std::vector<float> v = test::tensor_values(*q);
  double err = 0, ref = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = ck.arrays[2][2 * 64 * 64 + i];
    err += (v[i] - x) * (v[i] - x);
    ref += x * x;
  }
  CHECK(err / ref < 1e-4);
}

TEST_CASE("convert llama2c: malformed checkpoints are refused with one clear error") {
  test::TempDir dir("convert");
  std::vector<uint8_t> bytes = read_bytes(kModel);
  auto write = [&](const std::string& name, const std::vector<uint8_t>& b) {
    std::ofstream(dir.file(name), std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                                          static_cast<std::streamsize>(b.size()));
    return dir.file(name);
  };
  auto error_of = [&](const std::string& model) {
    try {
      convert::convert_llama2c(model, kTokenizer, dir.file("out.gguf"), DType::F32, nullptr);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Format);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 100);
  CHECK(error_of(write("truncated.bin", truncated)).find("implies") != std::string::npos);
  std::vector<uint8_t> bad_heads = bytes;
  const int32_t three = 3;
  std::memcpy(bad_heads.data() + 12, &three, 4);  // n_heads 3 does not divide dim 64
  CHECK(error_of(write("heads.bin", bad_heads)).find("n_heads") != std::string::npos);
  CHECK(error_of(write("tiny.bin", std::vector<uint8_t>(10))).find("too small") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.gguf")));
}

TEST_CASE("convert llama2c: the CLI writes the file and reports errors on stderr") {
  test::TempDir dir("convert");
  const std::string out = dir.file("cli.gguf");
  const std::string cmd = std::string(EMBER_BINARY) + " convert llama2c " + kModel + " " + kTokenizer + " -o " +
                          out + " > " + dir.file("log") + " 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  CHECK(gguf::File::open(out).tensors().size() == 38);
  const std::string bad = std::string(EMBER_BINARY) + " convert llama2c " + kTokenizer + " " + kTokenizer +
                          " -o " + dir.file("bad.gguf") + " > " + dir.file("log2") + " 2>&1";
  CHECK(WEXITSTATUS(std::system(bad.c_str())) == 4);  // Format
  std::ifstream log(dir.file("log2"));
  std::string line;
  std::getline(log, line);
  CHECK(line.starts_with("ember convert llama2c: "));
}

TEST_CASE("convert llama2c: GQA and an unshared classifier") {
  // A random checkpoint: dim 32, hidden 48, 2 layers, 4 query heads sharing 2 kv heads,
  // vocab 300 with its own classifier (negative vocab_size in the header), seq_len 16.
  test::TempDir dir("convert");
  const int32_t header[7] = {32, 48, 2, 4, 2, -300, 16};
  const size_t dim = 32, hid = 48, L = 2, kv = 16, V = 300, seq = 16, hs = 8;
  const size_t n_floats = V * dim + L * dim * 2 + L * dim * dim * 2 + L * dim * kv * 2 + L * dim * hid * 3 + dim +
                          seq * hs + V * dim;
  std::vector<float> w(n_floats);
  for (size_t i = 0; i < n_floats; ++i) w[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  {
    std::ofstream out(dir.file("gqa.bin"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
    // tokenizer.bin: max length, then score, length, bytes per token (pieces "t0", "t1", ...).
    std::ofstream tok(dir.file("tok.bin"), std::ios::binary);
    const int32_t max_len = 8;
    tok.write(reinterpret_cast<const char*>(&max_len), 4);
    for (int i = 0; i < 300; ++i) {
      const std::string piece = i < 3 ? "x" : (i < 259 ? fmt::format("<0x{:02X}>", i - 3) : fmt::format(" t{}", i));
      const float score = -static_cast<float>(i);
      const int32_t len = static_cast<int32_t>(piece.size());
      tok.write(reinterpret_cast<const char*>(&score), 4);
      tok.write(reinterpret_cast<const char*>(&len), 4);
      tok.write(piece.data(), len);
    }
  }
  const std::string out = dir.file("gqa.gguf");
  convert::convert_llama2c(dir.file("gqa.bin"), dir.file("tok.bin"), out, DType::F32, nullptr);
  const gguf::File f = gguf::File::open(out);
  CHECK(f.get_u32("llama.attention.head_count_kv") == 2);
  CHECK(f.tensors().size() == 3 + 2 * 9);
  const gguf::TensorInfo* wk = f.find_tensor("blk.1.attn_k.weight");
  REQUIRE(wk);
  CHECK(wk->ne[0] == 32);
  CHECK(wk->ne[1] == 16);
  const size_t wk_at = V * dim + L * dim + L * dim * dim + dim * kv;  // layer 1 of wk
  CHECK(std::memcmp(wk->data, w.data() + wk_at, dim * kv * 4) == 0);
  const gguf::TensorInfo* cls = f.find_tensor("output.weight");
  REQUIRE(cls);
  CHECK(std::memcmp(cls->data, w.data() + (n_floats - V * dim), V * dim * 4) == 0);
  CHECK(f.get_array("tokenizer.ggml.tokens").string_at(300 - 1) == "\xe2\x96\x81t299");

  auto model = Model::load(out, {.print_plan = false});
  ThreadPool pool(1);
  Context ctx(*model, {.n_ctx = 16, .print_plan = false}, pool);
  Batch b;
  for (int i = 0; i < 4; ++i) b.add(260 + i, i, 0, i == 3);
  const auto logits = ctx.decode(b);
  REQUIRE(logits.size() == 300);
  for (float v : logits) CHECK(std::isfinite(v));
}
