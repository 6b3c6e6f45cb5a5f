#include "cli/chat_setup.h"

namespace ember::cli {

ChatSetup chat_setup(const gguf::File& f, const ChatTemplate& tmpl) {
  const std::optional<std::string_view> text = f.find_string("tokenizer.chat_template");
  return ChatSetup{&tmpl, reply_format_for(text.value_or(std::string_view{}))};
}

}  // namespace ember::cli
