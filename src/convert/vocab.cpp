#include "convert/vocab.h"

#include <span>

#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace ember::convert {

void write_vocab(gguf::Writer& writer, const Vocab& vocab) {
  const size_t n = vocab.size();
  if (n == 0) fail(ErrorKind::Format, "vocabulary is empty");
  if (vocab.model.empty()) fail(ErrorKind::Format, "vocabulary has no tokenizer model name");
  if (vocab.types.size() != n)
    fail(ErrorKind::Format, "vocabulary has {} tokens but {} token types", n, vocab.types.size());
  if (!vocab.scores.empty() && vocab.scores.size() != n)
    fail(ErrorKind::Format, "vocabulary has {} tokens but {} scores", n, vocab.scores.size());
  const std::pair<const char*, const std::optional<uint32_t>*> specials[] = {
      {"bos", &vocab.bos_id}, {"eos", &vocab.eos_id}, {"unknown", &vocab.unk_id},
      {"padding", &vocab.pad_id}};
  for (const auto& [what, id] : specials) {
    if (*id && **id >= n)
      fail(ErrorKind::Format, "{} token id {} is outside the vocabulary of {} tokens", what, **id, n);
  }

  writer.set_string("tokenizer.ggml.model", vocab.model);
  if (!vocab.pre.empty()) writer.set_string("tokenizer.ggml.pre", vocab.pre);
  writer.set_array_string("tokenizer.ggml.tokens", vocab.tokens);
  if (!vocab.scores.empty()) writer.set_array_f32("tokenizer.ggml.scores", vocab.scores);
  std::vector<int32_t> types(n);
  for (size_t i = 0; i < n; ++i) types[i] = static_cast<int32_t>(vocab.types[i]);
  writer.set_array_i32("tokenizer.ggml.token_type", types);
  if (!vocab.merges.empty()) writer.set_array_string("tokenizer.ggml.merges", vocab.merges);
  if (vocab.bos_id) writer.set_u32("tokenizer.ggml.bos_token_id", *vocab.bos_id);
  if (vocab.eos_id) writer.set_u32("tokenizer.ggml.eos_token_id", *vocab.eos_id);
  if (vocab.unk_id) writer.set_u32("tokenizer.ggml.unknown_token_id", *vocab.unk_id);
  if (vocab.pad_id) writer.set_u32("tokenizer.ggml.padding_token_id", *vocab.pad_id);
  if (vocab.add_bos) writer.set_bool("tokenizer.ggml.add_bos_token", *vocab.add_bos);
  if (vocab.add_eos) writer.set_bool("tokenizer.ggml.add_eos_token", *vocab.add_eos);
  if (vocab.add_space_prefix) writer.set_bool("tokenizer.ggml.add_space_prefix", *vocab.add_space_prefix);
  if (!vocab.chat_template.empty()) writer.set_string("tokenizer.chat_template", vocab.chat_template);
}

}  // namespace ember::convert
