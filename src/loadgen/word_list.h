// Words for synthetic prompts: 129 common English words, each one token with its leading
// space both in llama's SentencePiece vocabulary ("\u2581the") and in GPT-2-style BPE ones
// ("\u0120the"; checked against ../shared/vocab's ggml-vocab-llama-spm and -gpt-2), so a
// prompt of N words joined by spaces is about N tokens (+ BOS, + a chat template's).
#pragma once
#include <span>
#include <string_view>

namespace ember::loadgen {

std::span<const std::string_view> prompt_words();

}  // namespace ember::loadgen
