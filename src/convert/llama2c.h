// llama2.c checkpoints (run.c's "legacy" export: 7 int32 header fields, then float32
// weights) and tokenizer.bin files, and their conversion into a llama GGUF.
//
// Layout note: llama2.c's run.c applies RoPE to adjacent pairs (i, i+1) of each head, the
// Meta layout that llama GGUFs also use, and llama2.c's exporter already undoes the
// Hugging Face permutation when exporting HF weights. So wq/wk rows are copied unchanged;
// only HF checkpoints need llama.cpp's Q/K permutation (see hf.h).
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "convert/vocab.h"
#include "model/arch.h"
#include "tensor/dtype.h"
#include "util/mmap.h"

namespace ember {
class ThreadPool;
}

namespace ember::convert {

struct Llama2cConfig {
  int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  int32_t vocab_size = 0;         // absolute value of the header field
  bool shared_classifier = true;  // header vocab_size > 0: logits reuse the embedding table
  int32_t seq_len = 0;
  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return n_kv_heads * head_size(); }
};

// A memory-mapped checkpoint with its weight arrays located (sizes checked against the file).
class Llama2cCheckpoint {
 public:
  static Llama2cCheckpoint open(const std::string& path);
  // Validates the header and the file size; throws Error(Format) naming field and values.
  static Llama2cConfig parse_config(std::span<const uint8_t> bytes, const std::string& source);

  const Llama2cConfig& config() const { return cfg_; }
  ModelShape shape() const;  // the llama GGUF it converts to (eps 1e-5, RoPE base 10000)

  // Weight arrays, row-major [rows][cols] as run.c's matmul reads them (cols = input size),
  // which is exactly GGUF's ne = {cols, rows}. `layer` is ignored for global tensors.
  struct Matrix {
    const float* data;
    int64_t rows, cols;
  };
  Matrix token_embedding() const;
  Matrix classifier() const;  // the embedding itself when shared
  Matrix final_norm() const;
  Matrix attn_norm(int layer) const;
  Matrix ffn_norm(int layer) const;
  Matrix wq(int layer) const;
  Matrix wk(int layer) const;
  Matrix wv(int layer) const;
  Matrix wo(int layer) const;
  Matrix w1(int layer) const;  // gate
  Matrix w2(int layer) const;  // down
  Matrix w3(int layer) const;  // up

 private:
  struct Offsets {
    size_t tok, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, wcls;  // in floats
  };
  Matrix at(size_t base, int layer, int64_t rows, int64_t cols) const;
  MappedFile file_;
  Llama2cConfig cfg_;
  Offsets off_{};
  const float* weights_ = nullptr;
};

// Reads a llama2.c tokenizer.bin (max_token_length, then per token: f32 score, i32 length,
// bytes) for `vocab_size` tokens into a SentencePiece-style GGUF vocabulary: spaces become
// U+2581, ids 0/1/2 are <unk>/<s>/</s>, <0xNN> pieces are byte tokens.
Vocab read_llama2c_tokenizer(const std::string& path, int32_t vocab_size);

struct ConvertStats {
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t file_bytes = 0;
};

// Writes the GGUF. Matrices are stored as `type` (F32, F16, BF16, Q8_0, ...; falling back
// per tensor when the rows do not divide), 1-D norms stay F32.
ConvertStats convert_llama2c(const std::string& model_path, const std::string& tokenizer_path,
                             const std::string& out_path, DType type, ThreadPool* pool);

}  // namespace ember::convert
