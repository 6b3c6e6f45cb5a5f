// Which chat template a model gets. A file with tokenizer.chat_template (or a template given
// with --chat-template-file) is rendered as its Jinja says (template/jinja/, through
// template/chat_prompt.h). The hand-written formats below are the fallback for files without a
// template, for a template that does not parse, and for --chat-template NAME; the family is
// recognised from the template text (distinctive markers such as "<|im_start|>" or "[INST]")
// and also decides where a reply ends when the end-of-turn marker is not a special token.
//
// A missing or unrecognised template falls back to what the MODEL says (fallback_chat_template):
// the family whose turn markers are special tokens of its vocabulary, preferring the one that
// general.architecture names; a family whose markers would be tokenized as ordinary text
// fragments is never chosen automatically (the model has never seen them, and the reply could
// not end at a token); when nothing fits, "plain" (User:/Assistant: text, see below).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace gguf { class File; }
namespace jinja { class Template; }
struct Vocab;

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// What the fallback knows of the model besides the template text. Empty = unknown.
struct ModelHints {
  const Vocab* vocab = nullptr;
  std::string_view architecture;  // general.architecture
};

// The fallback's choice and its reason ("the vocabulary has <start_of_turn>, <end_of_turn> as
// special tokens"), for the warning line.
struct TemplateChoice {
  std::string name;
  std::string why;
};
TemplateChoice fallback_chat_template(const ModelHints& hints);

class ChatTemplate {
 public:
  // override_name: one of names() (empty = recognise tokenizer.chat_template). When the template
  // is missing or not recognised, the fallback above decides and *warning (if given) receives
  // one line: what was chosen, why, and that --chat-template chooses another; a missing
  // template also says the model looks like a base (not instruction-tuned) model.
  // An unknown override_name throws Error(InvalidArgument) listing the known names.
  // `vocab`: the model's vocabulary when already loaded (else it is read from f if needed).
  // `template_text`: a Jinja template that replaces the file's (--chat-template-file); it
  // must parse, where a file's own template that does not parse falls back to a family with a
  // warning.
  static ChatTemplate from_gguf(const gguf::File& f, std::string_view override_name,
                                std::string* warning, const Vocab* vocab = nullptr,
                                std::optional<std::string_view> template_text = std::nullopt);
  // Same, from the template text itself (empty = no template) and what is known of the model.
  static ChatTemplate from_text(std::string_view template_text, std::string_view override_name,
                                std::string* warning, const ModelHints& hints = {});
  static ChatTemplate by_name(std::string_view name);  // throws Error(InvalidArgument)
  static const std::vector<std::string>& names();

  // The prompt text for `messages`, ending with the assistant header when
  // add_generation_prompt. It does NOT start with BOS: tokenize it with add_special = true (BOS
  // as the vocabulary says) and parse_special = true (turn markers are control tokens).
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  // The hand-written family: the one rendered when there is no Jinja template, and the one
  // whose end-of-turn marker text_stops() reports.
  const std::string& name() const { return name_; }
  // "jinja" when the model's own template renders, else name().
  std::string_view renderer() const { return jinja_ ? std::string_view("jinja") : std::string_view(name_); }

  // The model's Jinja template (nullptr: the family renders), and the texts of its BOS and EOS
  // tokens that the template sees as bos_token and eos_token.
  const jinja::Template* jinja() const { return jinja_.get(); }
  const std::string& jinja_source() const { return jinja_source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

  // The text that ends an assistant turn ("<end_of_turn>", "<|im_end|>", "</s>"; plain: "\nUser:").
  std::string_view end_of_turn() const;
  // The end-of-turn markers that `vocab` reads as plain text rather than as one special token:
  // generation cannot stop at a token there, so the caller must stop at these strings (not
  // part of the reply). Empty when the marker is a special token (the tokenizer's eog_ids
  // hold it: EOS, <end_of_turn>, <|im_end|> ...).
  std::vector<std::string> text_stops(const Vocab& vocab) const;

 private:
  std::string name_;
  std::string default_system_;  // qwen: system prompt used when the conversation has none
  std::shared_ptr<const jinja::Template> jinja_;
  std::string jinja_source_;
  std::string bos_token_, eos_token_;
};

// The family a template text belongs to, or "" when not recognised.
std::string detect_chat_template(std::string_view template_text);

}  // namespace ember
