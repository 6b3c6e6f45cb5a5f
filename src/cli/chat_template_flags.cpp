#include "cli/chat_template_flags.h"

#include <optional>

#include "util/error.h"
#include "util/mmap.h"

namespace ember::cli {

void add_chat_template_flags(CLI::App* cmd, ChatTemplateFlags& flags) {
  std::string names;
  for (const auto& n : ChatTemplate::names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--chat-template", flags.name, "a built-in format instead of the model's own template (" + names + ")");
  cmd->add_option("--chat-template-file", flags.file, "a Jinja chat template to use instead of the model's own");
}

ChatTemplate load_chat_template(const gguf::File& f, const ChatTemplateFlags& flags, const Vocab& vocab,
                                std::string* warning) {
  if (!flags.name.empty() && !flags.file.empty())
    fail(ErrorKind::InvalidArgument, "give at most one of --chat-template and --chat-template-file");
  std::optional<std::string> text;
  if (!flags.file.empty()) text = read_text_file(flags.file);
  return ChatTemplate::from_gguf(f, flags.name, warning, &vocab,
                                 text ? std::optional<std::string_view>(*text) : std::nullopt);
}

}  // namespace ember::cli
