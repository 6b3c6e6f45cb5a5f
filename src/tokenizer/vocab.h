// The vocabulary as a GGUF describes it (tokenizer.ggml.* keys): token texts, scores, types,
// merges, special ids and flags. Plain data plus the lookups the tokenizers need.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
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

// Hash for string keys that also accepts string_view lookups without allocating.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TextToId = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct SpecialIds {  // -1 = absent
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1, sep = -1;
};

struct Vocab {
  VocabModel model = VocabModel::SentencePiece;
  std::string pre = "default";  // tokenizer.ggml.pre (byte-level BPE only)
  std::vector<TokenEntry> tokens;
  TextToId text_to_id;
  std::vector<std::string> merges;  // "left right", in rank order (byte-level BPE)
  SpecialIds special;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SentencePiece: " " before the text (and after specials)
  bool ignore_merges = false;     // llama3-style: a pre-token that is a whole token is taken as is
  std::vector<int32_t> eog_ids;   // tokens that end generation

  static Vocab from_gguf(const gguf::File& f);  // throws Error(Format/Unsupported)

  int32_t find(std::string_view text) const;  // -1 when absent
  int n_tokens() const { return static_cast<int>(tokens.size()); }
};

const char* token_type_name(TokenType t);

}  // namespace ember
