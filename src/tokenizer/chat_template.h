// Chat prompt formatting for the common model families. The template is chosen by RECOGNISING
// tokenizer.chat_template (distinctive markers such as "<|im_start|>" or "[INST]"), not by
// interpreting its Jinja: a faithful Jinja subset (loops, filters, namespace(), raise_exception,
// whitespace control) is a large, fragile piece of code, while the families' formats are few,
// documented and stable. An unrecognised template produces a warning naming the fallback.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember {
namespace gguf { class File; }

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  // override_name: one of names() (empty = recognise tokenizer.chat_template). When the template
  // is missing or not recognised, *warning (if given) receives a line naming the fallback.
  // An unknown override_name throws Error(InvalidArgument) listing the known names.
  static ChatTemplate from_gguf(const gguf::File& f, std::string_view override_name,
                                std::string* warning);
  // Same, from the template text itself (empty = no template).
  static ChatTemplate from_text(std::string_view template_text, std::string_view override_name,
                                std::string* warning);
  static ChatTemplate by_name(std::string_view name);  // throws Error(InvalidArgument)
  static const std::vector<std::string>& names();

  // The prompt text for `messages`, ending with the assistant header when
  // add_generation_prompt. It does NOT start with BOS: tokenize it with add_special = true (BOS
  // as the vocabulary says) and parse_special = true (turn markers are control tokens).
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string default_system_;  // qwen: system prompt used when the conversation has none
};

// The family a template text belongs to, or "" when not recognised.
std::string detect_chat_template(std::string_view template_text);

}  // namespace ember
