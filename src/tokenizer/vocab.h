// The vocabulary as a GGUF describes it (tokenizer.ggml.* keys): token texts, scores, types,
// merges, special ids and flags. Plain data plus the lookups the tokenizers need.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace gguf { class File; }

enum class VocabModel { SentencePiece, BytePairBpe };  // tokenizer.ggml.model "llama" / "gpt2"

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

struct TokenEntry {
  std::string text;  // as stored: "▁Hello" (SentencePiece), "ĠHello" (byte-level), "<0x0A>"
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

// Token text -> id: open addressing over a power-of-two table of ids (compact and cache-friendly:
// lookups dominate both loading merges and tokenizing).
class TokenIndex {
 public:
  void build(const std::vector<TokenEntry>& tokens);  // the first of equal texts wins
  int32_t find(const std::vector<TokenEntry>& tokens, std::string_view text) const;  // -1 if absent

 private:
  std::vector<int32_t> slots_;  // token id or -1
  uint64_t mask_ = 0;
};

struct SpecialIds {  // -1 = absent
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1, sep = -1;
};

struct Vocab {
  VocabModel model = VocabModel::SentencePiece;
  std::string pre = "default";  // tokenizer.ggml.pre (byte-level BPE only)
  std::vector<TokenEntry> tokens;
  TokenIndex index;                 // built by from_gguf / build_index()
  std::vector<std::string> merges;  // "left right", in rank order (byte-level BPE)
  SpecialIds special;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SentencePiece: " " before the text (and after specials)
  bool ignore_merges = false;     // llama3-style: a pre-token that is a whole token is taken as is
  std::vector<int32_t> eog_ids;   // tokens that end generation

  static Vocab from_gguf(const gguf::File& f);  // throws Error(Format/Unsupported)

  void build_index() { index.build(tokens); }  // after changing `tokens` by hand
  int32_t find(std::string_view text) const { return index.find(tokens, text); }  // -1 when absent
  int n_tokens() const { return static_cast<int>(tokens.size()); }
};

const char* token_type_name(TokenType t);

}  // namespace ember
