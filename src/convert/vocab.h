// A tokenizer vocabulary as GGUF stores it (tokenizer.ggml.*), independent of where it came
// from (llama2.c tokenizer.bin, tokenizer.json, tokenizer.model, another GGUF).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::gguf {
class Writer;
}

namespace ember::convert {

// llama.cpp's llama_token_type values (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct Vocab {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre: the BPE pre-tokenizer's name; empty = not written
  std::vector<std::string> tokens;  // SentencePiece pieces spell spaces as U+2581
  std::vector<float> scores;        // SentencePiece scores; may be empty for BPE
  std::vector<TokenType> types;
  std::vector<std::string> merges;  // BPE only: "left right"
  std::optional<uint32_t> bos_id, eos_id, unk_id, pad_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  std::string chat_template;  // empty = not written

  size_t size() const { return tokens.size(); }
};

// Checks sizes and special ids (throws Error(Format) naming the problem) and sets every
// tokenizer.ggml.* key the vocabulary has.
void write_vocab(gguf::Writer& writer, const Vocab& vocab);

}  // namespace ember::convert
