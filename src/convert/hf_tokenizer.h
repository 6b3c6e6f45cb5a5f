// The tokenizer of a Hugging Face model folder as a GGUF vocabulary:
//   tokenizer.model (SentencePiece)            -> "llama" model, scores and types from the proto
//   tokenizer.json, byte-level BPE             -> "gpt2" model with merges; tokenizer.ggml.pre
//                                                 named from the pre-tokenizer's split regex
//   tokenizer.json, BPE with byte fallback     -> "llama" model, scores -id (merge priority)
// Special tokens (added_tokens: special -> control, others -> user-defined), BOS/EOS from
// tokenizer_config.json / config.json, and the chat template are filled in too.
#pragma once
#include <string>

#include "convert/vocab.h"
#include "util/json.h"

namespace ember::convert {

// n_vocab: rows of the embedding matrix; the vocabulary is padded with unused "[PADn]"
// tokens to that size (as llama.cpp does) and refused when larger.
Vocab read_hf_tokenizer(const std::string& dir, const json::Value& config, int64_t n_vocab);

// The tokenizer.ggml.pre name for a byte-level BPE pre-tokenizer regex, or "" when unknown.
std::string bpe_pre_name(const std::string& split_regex);

}  // namespace ember::convert
