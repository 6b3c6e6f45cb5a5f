// `ember template`: the prompt a conversation becomes, exactly as the model would see it (the
// command-line face of POST /apply-template, for people debugging a chat template).
//
//   ember template -m model.gguf -f conversation.json
//   ember template -m model.gguf --chat-template-file my.jinja -f conversation.json --tokens
//
// conversation.json: {"messages": [...], "tools": [...]?, "add_generation_prompt": true?,
// "chat_template_kwargs": {...}?}. The prompt's bytes go to stdout unchanged (no newline added);
// --tokens prints the token ids instead, one per line with their pieces.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/chat_template_flags.h"
#include "cli/commands.h"
#include "gguf/gguf.h"
#include "template/chat_prompt.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace ember::cli {
namespace {

struct TemplateFlags {
  std::string model;
  ChatTemplateFlags chat_template;
  std::string conversation;
  int64_t now = -1;
  bool tokens = false;
  int bench = 0;
};

int run_template(const TemplateFlags& f) {
  const gguf::File file = gguf::File::open(f.model);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  std::string warning;
  const ChatTemplate tmpl = load_chat_template(file, f.chat_template, tok.vocab(), &warning);
  if (!warning.empty()) std::fprintf(stderr, "ember: %s\n", warning.c_str());
  const json::Value body = json::parse(read_text_file(f.conversation), f.conversation);
  const auto now = f.now >= 0 ? std::optional<std::time_t>(static_cast<std::time_t>(f.now)) : std::nullopt;
  const ChatPrompt prompt = apply_template(tmpl, body, now);
  if (f.bench > 0) {  // render cost, for the note: the same conversation f.bench more times
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < f.bench; ++i) apply_template(tmpl, body, now);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    std::fprintf(stderr, "ember template: %.1f us per render (%d renders, %zu bytes)\n", took.count() / f.bench, f.bench,
                 prompt.text.size());
  }
  if (!f.tokens) {
    std::fwrite(prompt.text.data(), 1, prompt.text.size(), stdout);
    return 0;
  }
  std::string out;
  for (int32_t id : tokenize_chat_prompt(tok, prompt)) out += fmt::format("{} {}\n", id, json::quote(tok.piece(id)));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void add_template(CLI::App& app) {
  auto flags = std::make_shared<TemplateFlags>();
  CLI::App* cmd = app.add_subcommand("template", "Print the prompt a conversation (JSON) becomes under the model's chat template");
  cmd->add_option("-m,--model", flags->model, "GGUF file (its tokenizer.chat_template and vocabulary)")->required();
  cmd->add_option("-f,--file", flags->conversation, "JSON: messages, tools?, add_generation_prompt?, chat_template_kwargs?")->required();
  add_chat_template_flags(cmd, flags->chat_template);
  cmd->add_option("--now", flags->now, "Unix time that strftime_now() sees (default: the clock)");
  cmd->add_option("--bench", flags->bench, "also render N more times and print the time per render on stderr");
  cmd->add_flag("--tokens", flags->tokens, "print the prompt's token ids and pieces instead of its text");
  cmd->callback([flags] { set_exit_code(guarded("template", [&] { return run_template(*flags); })); });
}

}  // namespace ember::cli
