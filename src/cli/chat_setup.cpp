#include "cli/chat_setup.h"

#include "tokenizer/chat_template.h"

namespace ember::cli {

ChatSetup chat_setup(const gguf::File& f, const ChatTemplate& tmpl) {
  // The template that renders decides how replies are written: --chat-template-file's text
  // when given, else the file's own.
  const std::string_view text = tmpl.jinja() ? std::string_view(tmpl.jinja_source())
                                             : f.find_string("tokenizer.chat_template").value_or(std::string_view{});
  return ChatSetup{&tmpl, reply_format_for(text)};
}

}  // namespace ember::cli
