// `ember chat`: a conversation in the terminal using the model's chat template.
//
//   ember chat -m model.gguf [--system "You are terse."] [--chat-template chatml] [sampling flags]
//   ember chat -m big.gguf --draft small.gguf     replies by speculative decoding (same text
//   ember chat -m big.gguf --draft-ngram 3        when greedy; the same distribution otherwise)
//   ember chat -m qwen3.gguf --hide-thinking      leave the model's reasoning out (default: dimmed)
//
// The template is the model's tokenizer.chat_template; a file without one (a base model) gets
// the family its vocabulary and architecture point at, with a one-line warning saying so
// (tokenizer/chat_template.h). A reply ends at the template's end-of-turn marker, as a token
// or, where the vocabulary reads it as text, as a stop string (engine/conversation.h).
//
// Replies stream as they are generated. Ctrl-C interrupts a reply (the partial reply is kept
// in the conversation, see engine/conversation.h) and returns to the prompt; at the prompt
// it cancels the line. Ctrl-D or /exit quits with status 0. Input: our own line editor
// (util/line_editor.h): history on Up/Down, bracketed paste arrives as one message, a
// trailing backslash or Alt-Enter continues on the next line. When stdin is not a terminal
// each line (with backslash continuation) is one message and only replies go to stdout.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "cli/chat_setup.h"
#include "cli/commands.h"
#include "cli/reply_printer.h"
#include "cli/generation_flags.h"
#include "cli/grammar_flags.h"
#include "engine/conversation.h"
#include "engine/draft/draft_setup.h"
#include "sampling/sampler_chain.h"
#include "cli/chat_template_flags.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/line_editor.h"
#include "util/terminal.h"

namespace ember::cli {

namespace {

struct ChatFlags {
  GenerationFlags gen;
  std::string system;
  ChatTemplateFlags chat_template;
  bool ignore_eos = false;
  GrammarFlags grammar;  // --grammar, --json-schema: every reply constrained
  bool hide_thinking = false;
};

constexpr const char* kHelp =
    "commands:\n"
    "  /help              this list\n"
    "  /exit, /quit       leave (Ctrl-D too)\n"
    "  /clear             forget the conversation (keeps the system prompt)\n"
    "  /system [TEXT]     show or set the system prompt (applies from the next message)\n"
    "  /stats             statistics of the last reply (speculative decoding's too) and the context\n"
    "  /show              print the conversation so far\n"
    "  /set KEY VALUE     change a setting: temp, top-k, top-p, min-p, repeat-penalty, seed, n\n"
    "keys: Enter sends; a trailing \\ or Alt-Enter starts a new line; pasted text is one message;\n"
    "      Up/Down recall earlier messages; Ctrl-C stops a reply or clears the line\n";

void print_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

class ChatRepl {
 public:
  ChatRepl(ChatFlags& flags, LoadedModel& m, ChatTemplate chat_template)
      : reply_format_(chat_setup(m.model->gguf(), chat_template).reply),
        flags_(flags),
        m_(m),
        params_(sampling_params(flags.gen)),
        sampler_(params_, m.context->n_ctx()),
        draft_(load_draft_if_asked(flags.gen.draft, m)),
        session_(*m.context, *m.tokenizer, sampler_, draft_.context.get()),
        conversation_(session_, *m.tokenizer, std::move(chat_template), flags.system),
        editor_(STDIN_FILENO, STDOUT_FILENO),
        style_(editor_.interactive() && colours_wanted(STDOUT_FILENO)),
        err_style_(colours_wanted(STDERR_FILENO)) {
    options_.max_tokens = flags.gen.n_predict;
    options_.ignore_eos = flags.ignore_eos;
    options_.draft = sequence_drafting(flags.gen.draft);
    options_.grammar = grammar_constraint(flags.grammar, *m.tokenizer);
  }

  int loop() {
    if (editor_.interactive()) banner();
    for (;;) {
      const LineEditor::Result in = editor_.read(style_.user + "> " + style_.reset, 2, style_.dim + ". " + style_.reset, 2);
      if (in.status == LineEditor::Status::EndOfInput) return 0;
      if (in.status == LineEditor::Status::Cancelled) {
        if (!editor_.interactive()) return exit_code_for(ErrorKind::Interrupted);
        info("(Ctrl-D or /exit to quit)");
        continue;
      }
      const std::string text = trim(in.text);
      if (text.empty()) continue;
      if (text[0] == '/') {
        if (!command(text)) return 0;
        continue;
      }
      answer(text);
    }
  }

 private:
  static std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\n");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
  }

  // Notes for the person at the terminal: stdout when interactive, stderr otherwise (so a
  // script's stdout holds replies only).
  void info(const std::string& line) {
    if (editor_.interactive()) print_out(style_.info + line + style_.reset + "\n");
    else fmt::print(stderr, "{}\n", line);
  }
  void warn(const std::string& line) { fmt::print(stderr, "{}{}{}\n", err_style_.warning, line, err_style_.reset); }

  void banner() {
    info(fmt::format("ember chat · {} · template {} · context {} tokens", flags_.gen.model,
                     conversation_.chat_template().renderer(), conversation_.n_ctx()));
    info(describe_context_policy(m_.context->options()) + "; older messages are dropped between turns");
    info("/help for commands, Ctrl-D or /exit to quit");
  }

  std::string context_line() const {
    const int used = conversation_.context_used(), n = conversation_.n_ctx();
    return fmt::format("context {}/{} tokens ({}%)", used, n, n ? used * 100 / n : 0);
  }

  void answer(const std::string& text) {
    clear_interrupt();
    Conversation::Reply reply;
    try {
      print_out(style_.assistant);
      ReplyPrinter printer(reply_format_, style_, !flags_.hide_thinking, print_out);
      reply = conversation_.reply(text, options_, [&](std::string_view piece) { printer.push(piece); });
      printer.finish();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::ContextFull) throw;
      warn(e.what());
      return;
    }
    print_out(style_.reset + "\n");
    last_ = reply.result.stats;
    last_draft_ = reply.result.draft;
    have_last_ = true;
    const GenerationStats& s = reply.result.stats;
    if (reply.dropped_messages)
      info(fmt::format("(context full: dropped the {} oldest messages to make room)", reply.dropped_messages));
    if (s.shifted_tokens)
      info(fmt::format("(context full: {} old tokens were dropped during the reply by the context shift)", s.shifted_tokens));
    if (s.stop == StopReason::Interrupted) info("[interrupted]");
    if (s.stop == StopReason::ContextFull)
      info("(context full: the reply was cut; older messages will be dropped for the next one, "
           "or /clear to start over)");
    clear_interrupt();
    if (editor_.interactive())
      print_out(fmt::format("{}[{} · {} tokens, {:.1f} tok/s{}]{}\n", style_.dim, context_line(), s.generated_tokens,
                            s.generation_tps(), speculative_summary(s), style_.reset));
  }

  // " · drafted 40, accepted 31 (77%), 2.9 tokens/pass" after a speculative reply.
  std::string speculative_summary(const GenerationStats& s) const {
    if (!flags_.gen.draft.enabled()) return {};
    const DraftTally& t = last_draft_;
    return fmt::format(" · drafted {}, accepted {} ({:.0f}%), {:.2f} tokens/pass", t.drafted, t.accepted,
                       100.0 * t.acceptance_rate(), t.tokens_per_pass(s.generated_tokens));
  }

  // Returns false to quit.
  bool command(const std::string& line) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    std::string rest;
    std::getline(in, rest);
    rest = trim(rest);
    if (name == "/exit" || name == "/quit") return false;
    if (name == "/help") {
      print_out(kHelp);
    } else if (name == "/clear") {
      conversation_.clear();
      info("(conversation cleared)");
    } else if (name == "/system") {
      if (rest.empty()) {
        info(conversation_.system_prompt().empty() ? "(no system prompt)" : "system: " + conversation_.system_prompt());
      } else {
        conversation_.set_system_prompt(rest);
        info("(system prompt set; it applies from the next message)");
      }
    } else if (name == "/stats") {
      stats();
    } else if (name == "/show") {
      show();
    } else if (name == "/set") {
      set(rest);
    } else {
      warn(fmt::format("unknown command {} (/help lists them)", name));
    }
    return true;
  }

  void stats() {
    if (have_last_) {
      RunFacts facts;
      facts.model_path = flags_.gen.model;
      facts.load_ms = m_.load_ms;
      facts.seed = sampler_.seed();
      facts.greedy = sampler_.params().greedy();
      facts.n_threads = m_.pool->size();
      print_out(format_stats(last_, facts));
      if (flags_.gen.draft.enabled()) print_out(draft_stats_text(flags_.gen.draft, last_draft_, last_));
    }
    print_out(fmt::format("{}, {} messages; {}\n", context_line(), conversation_.messages().size(),
                          describe_context_policy(m_.context->options())));
  }

  void show() {
    if (!conversation_.system_prompt().empty()) print_out("[system] " + conversation_.system_prompt() + "\n");
    for (const ChatMessage& msg : conversation_.messages()) print_out("[" + msg.role + "] " + msg.content + "\n");
  }

  void set(const std::string& args) {
    std::istringstream in(args);
    std::string key, value;
    in >> key >> value;
    SamplingParams p = params_;
    int n_predict = options_.max_tokens;
    try {
      if (key == "temp") p.temperature = std::stof(value);
      else if (key == "top-k") p.top_k = std::stoi(value);
      else if (key == "top-p") p.top_p = std::stof(value);
      else if (key == "min-p") p.min_p = std::stof(value);
      else if (key == "repeat-penalty") p.repeat_penalty = std::stof(value);
      else if (key == "seed") p.seed = std::stoull(value);
      else if (key == "n") n_predict = std::stoi(value);
      else {
        warn("usage: /set temp|top-k|top-p|min-p|repeat-penalty|seed|n VALUE");
        return;
      }
      // The session holds a reference to it; drafts follow its settings.
      sampler_ = SamplerChain(p, m_.context->n_ctx());
    } catch (const std::exception&) {  // std::sto* parse errors, ember::Error from validation
      warn(fmt::format("/set {}: '{}' is not a valid value", key, value));
      return;
    }
    params_ = p;
    options_.max_tokens = n_predict;
    info(fmt::format("({} = {})", key, value));
  }

  ReplyFormat reply_format_;  // how its replies mark reasoning
  ChatFlags& flags_;
  LoadedModel& m_;
  SamplingParams params_;
  SamplerChain sampler_;
  DraftContext draft_;  // --draft: the draft model
  Session session_;
  Conversation conversation_;
  LineEditor editor_;
  Style style_, err_style_;
  GenerateOptions options_;
  GenerationStats last_;
  DraftTally last_draft_;
  bool have_last_ = false;
};

int run_chat(CLI::App* cmd, ChatFlags& f) {
  finish_generation_flags(f.gen);
  grammar_from_flags(f.grammar);  // a bad grammar is refused before the model loads
  LoadedModel m = load_model(model_setup(f.gen));
  std::string warning;
  ChatTemplate chat_template = load_chat_template(m.model->gguf(), f.chat_template, m.tokenizer->vocab(), &warning);
  if (!warning.empty()) {
    const Style s(colours_wanted(STDERR_FILENO));
    fmt::print(stderr, "{}warning: {}{}\n", s.warning, warning, s.reset);
  }
  InterruptScope interrupt_scope;
  ChatRepl repl(f, m, std::move(chat_template));
  return repl.loop();
}

}  // namespace

void add_chat(CLI::App& app) {
  auto flags = std::make_shared<ChatFlags>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model in the terminal (its chat template, streamed replies)");
  add_model_flags(cmd, flags->gen);
  cmd->add_option("--system", flags->system, "system prompt");
  add_chat_template_flags(cmd, flags->chat_template);
  cmd->add_option("-n,--n-predict", flags->gen.n_predict, "most tokens per reply (-1: until end of generation)")
      ->capture_default_str();
  cmd->add_flag("--hide-thinking", flags->hide_thinking, "leave the model's reasoning (<think>...</think>) out of replies");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "never stop at end-of-generation tokens (tests, benchmarks)");
  add_sampling_flags(cmd, flags->gen);
  add_draft_flags(cmd, flags->gen);
  add_grammar_flags(cmd, flags->grammar);
  cmd->callback([cmd, flags] { set_exit_code(guarded("chat", [&] { return run_chat(cmd, *flags); })); });
}

}  // namespace ember::cli
