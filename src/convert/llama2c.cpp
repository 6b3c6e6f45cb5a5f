#include "convert/llama2c.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "gguf/gguf_writer.h"
#include "quantize/ftype.h"
#include "quantize/tensor_writer.h"
#include "util/error.h"

namespace ember::convert {

namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);
constexpr int32_t kMaxDim = 1 << 20;          // sanity bound on every size field
constexpr uint32_t kVersion1Magic = 0x616b3432;  // "ak42": llama2.c's newer export formats

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float read_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Adds a*b to total, failing on overflow (sizes come from an untrusted header).
void add_product(uint64_t& total, uint64_t a, uint64_t b, const std::string& source) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    fail(ErrorKind::Format, "{}: weight sizes overflow", source);
  const uint64_t p = a * b;
  if (total > std::numeric_limits<uint64_t>::max() - p) fail(ErrorKind::Format, "{}: weight sizes overflow", source);
  total += p;
}

}  // namespace

Llama2cConfig Llama2cCheckpoint::parse_config(std::span<const uint8_t> bytes, const std::string& source) {
  if (bytes.size() < kHeaderBytes)
    fail(ErrorKind::Format, "{}: {} bytes is too small for a llama2.c header ({} bytes)", source, bytes.size(),
         kHeaderBytes);
  if (static_cast<uint32_t>(read_i32(bytes.data())) == kVersion1Magic)
    fail(ErrorKind::Unsupported,
         "{}: llama2.c export version 1/2 files (magic \"ak42\") are not supported; export with --version 0",
         source);
  Llama2cConfig c;
  const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  int32_t v[7];
  for (int i = 0; i < 7; ++i) {
    v[i] = read_i32(bytes.data() + 4 * i);
    const int32_t a = (i == 5 && v[i] < 0 && v[i] != std::numeric_limits<int32_t>::min()) ? -v[i] : v[i];
    if (a <= 0 || a > kMaxDim)
      fail(ErrorKind::Format, "{}: header field {} = {} is out of range (1..{})", source, names[i], v[i], kMaxDim);
  }
  c.dim = v[0];
  c.hidden_dim = v[1];
  c.n_layers = v[2];
  c.n_heads = v[3];
  c.n_kv_heads = v[4];
  c.shared_classifier = v[5] > 0;
  c.vocab_size = v[5] > 0 ? v[5] : -v[5];
  c.seq_len = v[6];
  if (c.dim % c.n_heads != 0)
    fail(ErrorKind::Format, "{}: dim {} is not a multiple of n_heads {}", source, c.dim, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    fail(ErrorKind::Format, "{}: n_heads {} is not a multiple of n_kv_heads {}", source, c.n_heads, c.n_kv_heads);
  if (c.head_size() % 2 != 0) fail(ErrorKind::Format, "{}: head size {} is odd", source, c.head_size());

  uint64_t floats = 0;
  const uint64_t L = c.n_layers, d = c.dim, h = c.hidden_dim, kv = c.kv_dim();
  add_product(floats, c.vocab_size, d, source);        // token embedding
  add_product(floats, L, d * 2, source);               // rms_att, rms_ffn
  add_product(floats, L, d * d * 2, source);           // wq, wo
  add_product(floats, L, d * kv * 2, source);          // wk, wv
  add_product(floats, L, d * h * 3, source);           // w1, w2, w3
  add_product(floats, d, 1, source);                   // rms_final
  add_product(floats, c.seq_len, c.head_size(), source);  // legacy freq_cis real + imag
  if (!c.shared_classifier) add_product(floats, c.vocab_size, d, source);
  const uint64_t expected = kHeaderBytes + floats * sizeof(float);
  if (floats > std::numeric_limits<uint64_t>::max() / 8 || bytes.size() != expected)
    fail(ErrorKind::Format,
         "{}: file has {} bytes but the header (dim {}, hidden {}, layers {}, heads {}/{}, vocab {}{}, seq {}) "
         "implies {}",
         source, bytes.size(), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
         c.shared_classifier ? "" : " unshared", c.seq_len, expected);
  return c;
}

Llama2cCheckpoint Llama2cCheckpoint::open(const std::string& path) {
  Llama2cCheckpoint ck;
  ck.file_ = MappedFile(path);
  ck.cfg_ = parse_config(ck.file_.bytes(), path);
  ck.weights_ = reinterpret_cast<const float*>(ck.file_.data() + kHeaderBytes);
  const Llama2cConfig& c = ck.cfg_;
  const size_t L = c.n_layers, d = c.dim, h = c.hidden_dim, kv = c.kv_dim();
  Offsets& o = ck.off_;
  size_t p = 0;
  auto take = [&](size_t n) { size_t at = p; p += n; return at; };
  o.tok = take(c.vocab_size * d);
  o.rms_att = take(L * d);
  o.wq = take(L * d * d);
  o.wk = take(L * kv * d);
  o.wv = take(L * kv * d);
  o.wo = take(L * d * d);
  o.rms_ffn = take(L * d);
  o.w1 = take(L * h * d);
  o.w2 = take(L * d * h);
  o.w3 = take(L * h * d);
  o.rms_final = take(d);
  take(static_cast<size_t>(c.seq_len) * c.head_size());  // freq_cis_real, freq_cis_imag (unused)
  o.wcls = c.shared_classifier ? o.tok : take(c.vocab_size * d);
  return ck;
}

ModelShape Llama2cCheckpoint::shape() const {
  ModelShape hp;
  hp.arch = &require_arch("llama");
  hp.n_vocab = cfg_.vocab_size;
  hp.n_embd = cfg_.dim;
  hp.n_ff = cfg_.hidden_dim;
  hp.n_layer = cfg_.n_layers;
  hp.n_head = cfg_.n_heads;
  hp.n_head_kv = cfg_.n_kv_heads;
  hp.n_ctx = cfg_.seq_len;
  hp.rms_eps = 1e-5f;       // run.c's rmsnorm
  hp.rope_base = 10000.0f;  // run.c's RoPE
  hp.tied_embeddings = cfg_.shared_classifier;
  return hp;
}

Llama2cCheckpoint::Matrix Llama2cCheckpoint::at(size_t base, int layer, int64_t rows, int64_t cols) const {
  if (layer < 0 || layer >= cfg_.n_layers) fail(ErrorKind::Internal, "llama2.c layer {} out of range", layer);
  return {weights_ + base + static_cast<size_t>(layer) * rows * cols, rows, cols};
}

using M = Llama2cCheckpoint::Matrix;
M Llama2cCheckpoint::token_embedding() const { return {weights_ + off_.tok, cfg_.vocab_size, cfg_.dim}; }
M Llama2cCheckpoint::classifier() const { return {weights_ + off_.wcls, cfg_.vocab_size, cfg_.dim}; }
M Llama2cCheckpoint::final_norm() const { return {weights_ + off_.rms_final, 1, cfg_.dim}; }
M Llama2cCheckpoint::attn_norm(int l) const { return at(off_.rms_att, l, 1, cfg_.dim); }
M Llama2cCheckpoint::ffn_norm(int l) const { return at(off_.rms_ffn, l, 1, cfg_.dim); }
M Llama2cCheckpoint::wq(int l) const { return at(off_.wq, l, cfg_.dim, cfg_.dim); }
M Llama2cCheckpoint::wk(int l) const { return at(off_.wk, l, cfg_.kv_dim(), cfg_.dim); }
M Llama2cCheckpoint::wv(int l) const { return at(off_.wv, l, cfg_.kv_dim(), cfg_.dim); }
M Llama2cCheckpoint::wo(int l) const { return at(off_.wo, l, cfg_.dim, cfg_.dim); }
M Llama2cCheckpoint::w1(int l) const { return at(off_.w1, l, cfg_.hidden_dim, cfg_.dim); }
M Llama2cCheckpoint::w2(int l) const { return at(off_.w2, l, cfg_.dim, cfg_.hidden_dim); }
M Llama2cCheckpoint::w3(int l) const { return at(off_.w3, l, cfg_.hidden_dim, cfg_.dim); }

Vocab read_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  MappedFile file(path);
  std::span<const uint8_t> b = file.bytes();
  if (b.size() < 4) fail(ErrorKind::Format, "{}: too small for a llama2.c tokenizer", path);
  const int32_t max_len = read_i32(b.data());
  if (max_len <= 0 || max_len > (1 << 16))
    fail(ErrorKind::Format, "{}: max_token_length {} is out of range", path, max_len);
  Vocab v;
  v.model = "llama";
  v.tokens.reserve(vocab_size);
  v.scores.reserve(vocab_size);
  v.types.reserve(vocab_size);
  size_t p = 4;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (b.size() - p < 8)
      fail(ErrorKind::Format, "{}: ends at token {} of {} (the model's vocabulary size)", path, id, vocab_size);
    const float score = read_f32(b.data() + p);
    const int32_t len = read_i32(b.data() + p + 4);
    p += 8;
    if (len < 0 || static_cast<size_t>(len) > b.size() - p)
      fail(ErrorKind::Format, "{}: token {} has length {} with {} bytes left", path, id, len, b.size() - p);
    std::string text(reinterpret_cast<const char*>(b.data() + p), static_cast<size_t>(len));
    p += static_cast<size_t>(len);

    // llama2.c spells BOS/EOS "\n<s>\n" / "\n</s>\n" and spaces as ' '; GGUF SentencePiece
    // vocabularies use the pieces themselves, with U+2581 for spaces.
    TokenType type = TokenType::Normal;
    unsigned byte = 0;
    char tail = 0;
    if (id == 0) {
      text = "<unk>";
      type = TokenType::Unknown;
    } else if (id == 1) {
      text = "<s>";
      type = TokenType::Control;
    } else if (id == 2) {
      text = "</s>";
      type = TokenType::Control;
    } else if (text.empty()) {
      type = TokenType::Control;
    } else if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X%c", &byte, &tail) == 2 && tail == '>') {
      type = TokenType::Byte;
    }
    std::string escaped;
    escaped.reserve(text.size());
    for (char ch : text) {
      if (ch == ' ')
        escaped += "\xe2\x96\x81";
      else
        escaped += ch;
    }
    v.tokens.push_back(std::move(escaped));
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_eos = false;
  v.add_space_prefix = true;  // run.c prepends the dummy " " token, as SentencePiece does
  return v;
}

ConvertStats convert_llama2c(const std::string& model_path, const std::string& tokenizer_path,
                             const std::string& out_path, DType type, ThreadPool* pool) {
  const Llama2cCheckpoint ck = Llama2cCheckpoint::open(model_path);
  const Llama2cConfig& c = ck.config();
  const ModelShape hp = ck.shape();
  const Vocab vocab = read_llama2c_tokenizer(tokenizer_path, c.vocab_size);

  gguf::Writer w;
  write_hparams(w, hp);
  w.set_string("general.name", std::filesystem::path(model_path).stem().string());
  w.set_u32("general.file_type", quantize::file_type_of(type).llama_ftype);
  w.set_u32("general.quantization_version", 2);
  write_vocab(w, vocab);

  ConvertStats stats;
  // The checkpoint stays mapped until write() returns; sources read it directly.
  auto source_for = [&](const std::string& name) -> M {
    if (name == "token_embd.weight") return ck.token_embedding();
    if (name == "output.weight") return ck.classifier();
    if (name == "output_norm.weight") return ck.final_norm();
    int layer = -1;
    char what[32] = {};
    if (std::sscanf(name.c_str(), "blk.%d.%31[a-z_].weight", &layer, what) != 2)
      fail(ErrorKind::Internal, "llama2.c has no tensor for {}", name);
    const std::string t = what;
    if (t == "attn_norm") return ck.attn_norm(layer);
    if (t == "ffn_norm") return ck.ffn_norm(layer);
    if (t == "attn_q") return ck.wq(layer);
    if (t == "attn_k") return ck.wk(layer);
    if (t == "attn_v") return ck.wv(layer);
    if (t == "attn_output") return ck.wo(layer);
    if (t == "ffn_gate") return ck.w1(layer);
    if (t == "ffn_down") return ck.w2(layer);
    if (t == "ffn_up") return ck.w3(layer);
    fail(ErrorKind::Internal, "llama2.c has no tensor for {}", name);
  };
  for (const TensorSpec& spec : tensor_specs(hp)) {
    const M m = source_for(spec.name);
    if (m.rows * m.cols != spec.n_elements() || m.cols != spec.shape[0])
      fail(ErrorKind::Internal, "{}: llama2.c matrix {}x{} does not match", spec.name, m.rows, m.cols);
    const float* base = m.data;
    const int64_t cols = m.cols;
    quantize::add_encoded_tensor(
        w, spec.name, spec.shape, type,
        [base, cols](int64_t row, float* out) { std::memcpy(out, base + row * cols, cols * sizeof(float)); },
        pool);
    stats.n_params += static_cast<uint64_t>(spec.n_elements());
    ++stats.n_tensors;
  }
  w.write(out_path);
  stats.file_bytes = std::filesystem::file_size(out_path);
  return stats;
}

}  // namespace ember::convert
