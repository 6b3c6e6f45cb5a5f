// Pre-tokenizers of byte-level BPE vocabularies: the regex splits each family applies before
// merging (tokenizer.ggml.pre names them), written as small hand-made scanners instead of a regex
// engine. A family is a sequence of patterns; each pattern splits every current fragment into
// its matches and the gaps between them (both kept), exactly like a chain of Hugging Face
// `Split(pattern, behavior="isolated")` steps or llama.cpp's unicode_regex_split.
#pragma once
#include <string_view>
#include <vector>

namespace ember {

enum class PreTokenizer {
  Default,        // llama.cpp's fallback for GGUFs without tokenizer.ggml.pre
  Gpt2,           // gpt-2, mpt, gpt-neox, olmo, phi-2 ...
  Llama3,         // llama3 / llama-bpe, dbrx, smaug-bpe
  Qwen2,          // llama3's pattern with single digits
  DeepseekLlm,
  DeepseekCoder,
  Falcon,
  Starcoder,      // starcoder, refact, command-r, smollm ...
  Gpt4o,          // gpt-4o: tiktoken's o200k_base (gpt-oss)
};

// Maps tokenizer.ggml.pre to a family; an empty name means Default. Throws Error(Unsupported)
// naming the value and the known names.
PreTokenizer pretokenizer_from_name(std::string_view name);
const char* pretokenizer_name(PreTokenizer p);

// Appends the pieces of `text` (consecutive, covering every byte) to `out`. Bytes that are not
// valid UTF-8 stay in the pieces as they are.
void pretokenize(PreTokenizer p, std::string_view text, std::vector<std::string_view>& out);

}  // namespace ember
