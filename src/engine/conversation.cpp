#include "engine/conversation.h"

#include <algorithm>
#include <limits>

#include "engine/stop_strings.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {

namespace {

// Tokens per run while watching for a text stop: the most generated (and hidden) past the stop.
constexpr int kStopRunTokens = 8;

// A reply's text through the stop strings (engine/stop_strings.h), kept whole for the result.
class StopText {
 public:
  explicit StopText(const std::vector<std::string>& stops) : filter_(stops) {}
  std::string push(std::string_view piece) { return keep(filter_.push(piece)); }
  std::string finish() { return keep(filter_.flush()); }  // the reply ended without a stop
  bool stopped() const { return filter_.stopped(); }
  const std::string& text() const { return text_; }

 private:
  std::string keep(std::string out) {
    text_ += out;
    return out;
  }
  StopStringFilter filter_;
  std::string text_;
};

// Folds one run's stats into the reply's: the first run's prefill is the prompt's; a later
// run's prefill decodes the previous run's last token, which is generation time.
void add_run(GenerationStats& total, const GenerationStats& run, bool first) {
  if (first) {
    total = run;
    return;
  }
  total.generated_tokens += run.generated_tokens;
  total.generation_ms += run.prompt_ms + run.generation_ms;
  total.shifted_tokens += run.shifted_tokens;
  total.context_used = run.context_used;
  total.stop = run.stop;
}

// Tokens for the next run of a reply watched for a text stop. A run of m tokens after a prompt
// of p leaves p + m - 1 in the cache, and the next prompt adds the last token; when that would
// not fit, the run goes on until the Context shifts (--context-shift) or reports it full,
// rather than ending with a cache the next run's prompt would overflow.
int run_length(size_t prompt_size, int left, int n_ctx) {
  const int p = static_cast<int>(prompt_size);
  const int m = std::min(kStopRunTokens, left);
  return p + m > n_ctx ? std::min(left, n_ctx - p + 2) : m;
}

}  // namespace

Conversation::Conversation(Generator& generator, const Tokenizer& tok, ChatTemplate chat_template,
                           std::string system_prompt)
    : generator_(generator),
      tok_(tok),
      template_(std::move(chat_template)),
      stops_(template_.text_stops(tok.vocab())),
      system_(std::move(system_prompt)) {}

std::vector<int32_t> Conversation::render_tokens(bool add_generation_prompt) const {
  std::vector<ChatMessage> all;
  if (!system_.empty()) all.push_back({"system", system_});
  all.insert(all.end(), messages_.begin(), messages_.end());
  return tok_.encode(template_.render(all, add_generation_prompt), /*add_special=*/true, /*parse_special=*/true);
}

Conversation::Reply Conversation::reply(const std::string& user_text, const GenerateOptions& options,
                                        const Generator::TextSink& on_text) {
  Reply reply;
  const std::vector<ChatMessage> before = messages_;
  messages_.push_back({"user", user_text});
  const size_t room = static_cast<size_t>(std::min(256, n_ctx() / 4));
  std::vector<int32_t> tokens = render_tokens(true);
  while (tokens.size() + room > static_cast<size_t>(n_ctx())) {
    if (messages_.size() <= 1) {
      messages_ = before;
      fail(ErrorKind::ContextFull,
           "this message needs {} tokens with the template{} and {} more for a reply; the context holds {} (raise -c)",
           tokens.size(), system_.empty() ? "" : " and the system prompt", room, n_ctx());
    }
    // Drop the oldest exchange: a user message and the reply that follows it.
    const size_t n_drop = messages_.size() >= 3 && messages_[1].role == "assistant" ? 2 : 1;
    messages_.erase(messages_.begin(), messages_.begin() + static_cast<std::ptrdiff_t>(n_drop));
    reply.dropped_messages += static_cast<int>(n_drop);
    tokens = render_tokens(true);
  }
  reply.result = stops_.empty() ? generator_.generate(tokens, options, on_text)
                                : generate_until_stop(std::move(tokens), options, on_text);
  if (reply.result.stats.stop == StopReason::Interrupted && reply.result.tokens.empty()) {
    messages_.pop_back();  // interrupted before answering: forget the question
    return reply;
  }
  messages_.push_back({"assistant", reply.result.text});
  return reply;
}

// Runs of kStopRunTokens, each prompted with what the cache holds plus the last token sampled
// (which the run decodes first, nothing else): plain decoding gives the same tokens and text
// as one long run, speculative decoding the same distribution (drafts are cut at run ends).
GenerationResult Conversation::generate_until_stop(std::vector<int32_t> prompt, const GenerateOptions& options,
                                                   const Generator::TextSink& on_text) {
  GenerationResult total;
  StopText text(stops_);
  auto show = [&](std::string_view piece) {
    const std::string out = text.push(piece);
    if (!out.empty() && on_text) on_text(out);
  };
  const int budget = options.max_tokens < 0 ? std::numeric_limits<int>::max() : options.max_tokens;
  for (bool first = true;; first = false) {
    GenerateOptions run_options = options;
    run_options.max_tokens = run_length(prompt.size(), budget - total.stats.generated_tokens, n_ctx());
    GenerationResult run = generator_.generate(prompt, run_options, show);
    add_run(total.stats, run.stats, first);
    total.tokens.insert(total.tokens.end(), run.tokens.begin(), run.tokens.end());
    const bool more = run.stats.stop == StopReason::TokenLimit && !run.tokens.empty() &&
                      total.stats.generated_tokens < budget;
    if (text.stopped() || !more) break;
    prompt = generator_.cached_tokens();
    prompt.push_back(run.tokens.back());
    if (prompt.size() > static_cast<size_t>(n_ctx())) {
      total.stats.stop = StopReason::ContextFull;
      break;
    }
  }
  if (text.stopped()) total.stats.stop = StopReason::EndOfGeneration;  // the model ended its turn
  else if (const std::string rest = text.finish(); !rest.empty() && on_text) on_text(rest);
  total.text = text.text();
  return total;
}

void Conversation::clear() {
  messages_.clear();
  generator_.clear();
}

void Conversation::set_system_prompt(std::string text) { system_ = std::move(text); }

}  // namespace ember
