// Text <-> token ids for every vocabulary a GGUF can carry (tokenizer.ggml.*):
//   - "llama": SentencePiece-style, score-driven merges over UTF-8 characters with byte fallback
//     (Llama 2, Mistral, Phi-3, Baichuan, Gemma);
//   - "gpt2": byte-level BPE, ranked merges over byte-to-unicode mapped text, after a
//     pre-tokenizer chosen by tokenizer.ggml.pre (see pretokenizer.h).
// Special tokens (control / user-defined) are matched in the text before either algorithm runs.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ember {
namespace gguf { class File; }

class Tokenizer {
 public:
  // Reads the vocabulary from GGUF metadata. Throws Error(Format) for missing/malformed keys
  // and Error(Unsupported) for an unknown tokenizer.ggml.model or tokenizer.ggml.pre.
  static Tokenizer from_gguf(const gguf::File& f);
  explicit Tokenizer(Vocab vocab);

  // add_special: prepend BOS / append EOS as the metadata (or set_add_bos/eos) says.
  // parse_special: the text of a control token in `text` becomes that token; when false it is
  // plain text. User-defined tokens are always matched (as Hugging Face tokenizers do).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // A chat prompt: encode(text, true, true), except that control-token text inside `data`
  // ([begin, end) byte ranges of text that came from a conversation, sorted) stays plain text
  // (user-defined tokens still match there), and BOS is not added a second time when the text
  // already starts with it.
  std::vector<int32_t> encode_marked(std::string_view text, std::span<const std::pair<size_t, size_t>> data) const;

  // Concatenated bytes of the tokens' pieces. Control tokens render as nothing unless
  // render_special. For vocabularies that add a space prefix (SentencePiece), the leading space of
  // the first piece is dropped, so decode(encode(x)) == x.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // The bytes a token stands for (▁ -> space, byte-level chars -> bytes, <0xNN> -> byte); for
  // control tokens, their text. May be an incomplete UTF-8 sequence.
  std::string_view piece(int32_t id) const;
  // The token's entry in the vocabulary as stored ("▁Hello", "ĠHello", "<0x0A>").
  std::string_view token_text(int32_t id) const { return vocab_->tokens[check(id)].text; }

  int n_vocab() const { return static_cast<int>(vocab_->tokens.size()); }
  int32_t bos() const { return vocab_->special.bos; }  // -1 when the vocabulary has none
  int32_t eos() const { return vocab_->special.eos; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  void set_add_bos(bool v) { add_bos_ = v; }  // overrides tokenizer.ggml.add_bos_token
  void set_add_eos(bool v) { add_eos_ = v; }
  bool is_eog(int32_t id) const;      // ends generation: EOS, EOT, EOM, <|im_end|>, <end_of_turn> ...
  const std::vector<int32_t>& eog_ids() const { return vocab_->eog_ids; }  // all such ids
  bool is_control(int32_t id) const;  // control or unknown token: not part of the text
  const Vocab& vocab() const { return *vocab_; }

 private:
  template <class Accept>
  std::vector<int32_t> encode_impl(std::string_view text, bool add_special, bool parse_special, Accept&& accept) const;
  int32_t check(int32_t id) const;  // throws Error(InvalidArgument) when out of range
  std::shared_ptr<const Vocab> vocab_;  // shared: copies of a Tokenizer are cheap
  std::shared_ptr<const struct TokenizerTables> tables_;
  bool add_bos_ = false;
  bool add_eos_ = false;
};

// Decodes a stream of tokens one at a time, holding back bytes until they form whole UTF-8
// characters, so a character split over several byte tokens is never printed half.
// The concatenation of all push() results plus flush() equals Tokenizer::decode of the ids (with
// LeadingSpace::StripFirst) or the plain concatenation of pieces (LeadingSpace::Keep).
class StreamingDecoder {
 public:
  enum class LeadingSpace {
    Keep,        // continuing text (tokens generated after a prompt): every piece as is
    StripFirst,  // a fresh text: drop the SentencePiece space prefix like decode() does
  };
  explicit StreamingDecoder(const Tokenizer& tok, LeadingSpace mode = LeadingSpace::Keep,
                            bool render_special = false);
  std::string push(int32_t id);  // bytes that are now complete (possibly empty)
  std::string flush();           // whatever is held back, even if not valid UTF-8

 private:
  const Tokenizer* tok_;
  bool strip_pending_;
  bool render_special_;
  std::string held_;
};

}  // namespace ember
