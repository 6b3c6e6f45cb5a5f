#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/gguf.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

namespace ember {

namespace {

constexpr const char* kTokens = "tokenizer.ggml.tokens";

// Reads an optional token id key; ids outside the vocabulary are treated as absent for the
// optional roles (pad, sep ...) and rejected for BOS/EOS, which the engine relies on.
int32_t read_id(const gguf::File& f, const char* key, int32_t fallback, int n_vocab, bool strict) {
  const auto v = f.find_u64(key);
  if (!v) return fallback < n_vocab ? fallback : -1;
  if (*v >= static_cast<uint64_t>(n_vocab)) {
    if (strict) fail(ErrorKind::Format, "{}: {}: token id {} is outside the vocabulary of {} tokens", f.source(), key, *v, n_vocab);
    return -1;
  }
  return static_cast<int32_t>(*v);
}

// Texts that mark the end of a turn in the common chat formats (each chat template's end of
// turn, see tokenizer/chat_template.cpp). "</s>" ends llama2/mistral/zephyr turns also in
// vocabularies whose EOS is another token (Phi-3's is <|endoftext|>).
bool ends_a_turn(std::string_view text) {
  static constexpr std::string_view kEndOfTurn[] = {
      "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
      "<|end_of_text|>", "<EOT>", "<|EOT|>", "<｜end▁of▁sentence｜>", "</s>",
      "<|return|>", "<|call|>"};  // gpt-oss (Harmony): the end of a reply, and of a tool call
  for (auto t : kEndOfTurn) {
    if (text == t) return true;
  }
  return false;
}

}  // namespace

const char* token_type_name(TokenType t) {
  switch (t) {
    case TokenType::Undefined: return "undefined";
    case TokenType::Normal: return "normal";
    case TokenType::Unknown: return "unknown";
    case TokenType::Control: return "control";
    case TokenType::UserDefined: return "user-defined";
    case TokenType::Unused: return "unused";
    case TokenType::Byte: return "byte";
  }
  return "?";
}

namespace {
uint64_t hash_text(std::string_view s) {  // FNV-1a, then a final mix for the low bits
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h ^ (h >> 29);
}
}  // namespace

void TokenIndex::build(const std::vector<TokenEntry>& tokens) {
  size_t cap = 16;
  while (cap < tokens.size() * 2) cap <<= 1;  // load factor <= 0.5
  slots_.assign(cap, -1);
  mask_ = cap - 1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& text = tokens[id].text;
    if (text.empty()) continue;  // can never be matched
    for (uint64_t i = hash_text(text) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] < 0) {
        slots_[i] = static_cast<int32_t>(id);
        break;
      }
      if (tokens[slots_[i]].text == text) break;  // duplicate text: keep the first id
    }
  }
}

int32_t TokenIndex::find(const std::vector<TokenEntry>& tokens, std::string_view text) const {
  if (slots_.empty()) return -1;
  for (uint64_t i = hash_text(text) & mask_;; i = (i + 1) & mask_) {
    const int32_t id = slots_[i];
    if (id < 0 || tokens[id].text == text) return id;
  }
}

namespace {

VocabModel vocab_model(const gguf::File& f) {
  const auto model = f.find_string("tokenizer.ggml.model");
  if (!model) fail(ErrorKind::Format, "{}: no tokenizer.ggml.model: the file carries no vocabulary", f.source());
  if (*model == "llama") return VocabModel::SentencePiece;
  if (*model == "gpt2") return VocabModel::BytePairBpe;
  fail(ErrorKind::Unsupported, "{}: tokenizer.ggml.model '{}' is not supported (supported: llama, gpt2)", f.source(), *model);
}

// The token texts, scores and types, each array checked against the others' length.
std::vector<TokenEntry> read_tokens(const gguf::File& f) {
  const gguf::ArrayView* tokens = f.find_array(kTokens);
  if (!tokens) fail(ErrorKind::Format, "{}: {} is missing", f.source(), kTokens);
  if (tokens->element_type() != gguf::ValueType::STRING)
    fail(ErrorKind::Format, "{}: {} holds {}, expected strings", f.source(), kTokens, gguf::value_type_name(tokens->element_type()));
  const uint64_t n = tokens->size();
  if (n == 0 || n > (1u << 30)) fail(ErrorKind::Format, "{}: {} has {} entries", f.source(), kTokens, n);

  const gguf::ArrayView* scores = f.find_array("tokenizer.ggml.scores");
  const gguf::ArrayView* types = f.find_array("tokenizer.ggml.token_type");
  for (auto [arr, key] : {std::pair{scores, "tokenizer.ggml.scores"}, std::pair{types, "tokenizer.ggml.token_type"}}) {
    if (arr && arr->size() != n)
      fail(ErrorKind::Format, "{}: {} has {} entries but {} has {}", f.source(), key, arr->size(), kTokens, n);
  }
  std::vector<TokenEntry> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    TokenEntry& t = out[i];
    t.text = std::string(tokens->string_at(i));
    if (scores) t.score = static_cast<float>(scores->float_at(i));
    if (types) {
      const int64_t ty = types->int_at(i);
      t.type = (ty >= 0 && ty <= 6) ? static_cast<TokenType>(ty) : TokenType::Undefined;
    }
  }
  return out;
}

// A byte-level BPE vocabulary's pre-tokenizer and merges.
void read_bpe(const gguf::File& f, Vocab& v) {
  const auto pre = f.find_string("tokenizer.ggml.pre");
  v.pre = pre ? std::string(*pre) : std::string("default");
  const PreTokenizer kind = pretokenizer_from_name(v.pre);  // unknown names fail here
  if (kind == PreTokenizer::Llama3) {
    v.ignore_merges = true;  // tokenizer.json "ignore_merges": true
    v.add_bos = true;
  }
  const gguf::ArrayView* merges = f.find_array("tokenizer.ggml.merges");
  if (!merges) fail(ErrorKind::Format, "{}: tokenizer.ggml.merges is missing (required by the gpt2 tokenizer model)", f.source());
  if (merges->element_type() != gguf::ValueType::STRING)
    fail(ErrorKind::Format, "{}: tokenizer.ggml.merges holds {}, expected strings", f.source(), gguf::value_type_name(merges->element_type()));
  v.merges.reserve(merges->size());
  for (uint64_t i = 0; i < merges->size(); ++i) v.merges.emplace_back(merges->string_at(i));
}

// Special token ids and the add-BOS/EOS/space flags (SentencePiece defaults where absent).
void read_specials(const gguf::File& f, Vocab& v) {
  const int n_vocab = static_cast<int>(v.tokens.size());
  const bool spm = v.model == VocabModel::SentencePiece;
  v.special.bos = read_id(f, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n_vocab, true);
  v.special.eos = read_id(f, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n_vocab, true);
  v.special.unk = read_id(f, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n_vocab, false);
  v.special.eot = read_id(f, "tokenizer.ggml.eot_token_id", -1, n_vocab, false);
  v.special.eom = read_id(f, "tokenizer.ggml.eom_token_id", -1, n_vocab, false);
  v.special.pad = read_id(f, "tokenizer.ggml.padding_token_id", -1, n_vocab, false);
  v.special.sep = read_id(f, "tokenizer.ggml.seperator_token_id", -1, n_vocab, false);  // sic, as written by gguf-py
  if (auto b = f.find_bool("tokenizer.ggml.add_bos_token")) v.add_bos = *b;
  if (auto b = f.find_bool("tokenizer.ggml.add_eos_token")) v.add_eos = *b;
  if (auto b = f.find_bool("tokenizer.ggml.add_space_prefix")) v.add_space_prefix = *b;
  if (v.add_bos && v.special.bos < 0)
    fail(ErrorKind::Format, "{}: tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token", f.source());
  if (v.add_eos && v.special.eos < 0)
    fail(ErrorKind::Format, "{}: tokenizer.ggml.add_eos_token is set but the vocabulary has no EOS token", f.source());
}

// End of generation: EOS/EOT/EOM plus the end-of-turn markers of the chat formats, which
// older converters did not record in metadata.
std::vector<int32_t> eog_ids_of(const Vocab& v) {
  std::vector<int32_t> ids;
  for (int32_t id : {v.special.eos, v.special.eot, v.special.eom}) {
    if (id >= 0) ids.push_back(id);
  }
  for (int32_t id = 0; id < static_cast<int32_t>(v.tokens.size()); ++id) {
    const TokenEntry& t = v.tokens[id];
    const bool special = t.type == TokenType::Control || t.type == TokenType::UserDefined;
    if (special && ends_a_turn(t.text) && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  // Harmony (gpt-oss) ends a message with <|end|> and the reply with <|return|> or <|call|>:
  // where both of those are there, <|end|> does not end generation (as llama.cpp).
  const auto text_of = [&](int32_t id) { return std::string_view(v.tokens[id].text); };
  const auto has = [&](std::string_view text) {
    return std::any_of(ids.begin(), ids.end(), [&](int32_t id) { return text_of(id) == text; });
  };
  if (has("<|return|>") && has("<|call|>"))
    std::erase_if(ids, [&](int32_t id) { return text_of(id) == "<|end|>"; });
  return ids;
}

}  // namespace

Vocab Vocab::from_gguf(const gguf::File& f) {
  Vocab v;
  v.model = vocab_model(f);
  v.tokens = read_tokens(f);
  v.build_index();
  if (v.model == VocabModel::SentencePiece) {
    // SentencePiece conventions (and llama.cpp's defaults for files that omit the keys).
    v.add_bos = true;
    v.add_space_prefix = true;
  } else {
    read_bpe(f, v);
  }
  read_specials(f, v);
  v.eog_ids = eog_ids_of(v);
  return v;
}

}  // namespace ember
