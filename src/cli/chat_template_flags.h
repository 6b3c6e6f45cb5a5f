// --chat-template NAME and --chat-template-file FILE, shared by chat, batch, serve and
// template: which chat template a command renders conversations with.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace ember {
namespace gguf { class File; }
struct Vocab;
}  // namespace ember

namespace ember::cli {

struct ChatTemplateFlags {
  std::string name;  // a built-in family instead of the model's template
  std::string file;  // a Jinja template instead of the model's
};

void add_chat_template_flags(CLI::App* cmd, ChatTemplateFlags& flags);

// The model's template unless the flags say otherwise (the two flags exclude each other).
// A warning line about the choice, if any, goes to *warning.
ChatTemplate load_chat_template(const gguf::File& f, const ChatTemplateFlags& flags, const Vocab& vocab,
                                std::string* warning);

}  // namespace ember::cli
