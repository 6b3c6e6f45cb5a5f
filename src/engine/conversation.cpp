#include "engine/conversation.h"

#include <algorithm>

#include "template/chat_prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {

Conversation::Conversation(Session& session, const Tokenizer& tok, ChatTemplate chat_template,
                           std::string system_prompt)
    : session_(session),
      tok_(tok),
      template_(std::move(chat_template)),
      stops_(template_.text_stops(tok.vocab())),
      system_(std::move(system_prompt)) {}

// Through render_chat_prompt, as every chat path: the model's own template when it has one,
// and the user's text never turns into control tokens.
std::vector<int32_t> Conversation::render_tokens(bool add_generation_prompt) const {
  ChatPromptInput input;
  auto add = [&](const std::string& role, const std::string& content) {
    input.messages.push_back(json::Value{{"role", role}, {"content", content}});
  };
  if (!system_.empty()) add("system", system_);
  for (const ChatMessage& m : messages_) add(m.role, m.content);
  input.add_generation_prompt = add_generation_prompt;
  return tokenize_chat_prompt(tok_, render_chat_prompt(template_, input));
}

Conversation::Reply Conversation::reply(const std::string& user_text, const GenerateOptions& options,
                                        const Session::TextSink& on_text) {
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
  GenerateOptions with_stops = options;
  with_stops.stop_strings.insert(with_stops.stop_strings.end(), stops_.begin(), stops_.end());
  reply.result = session_.generate(tokens, with_stops, on_text);
  if (reply.result.stats.stop == StopReason::Interrupted && reply.result.tokens.empty()) {
    messages_.pop_back();  // interrupted before answering: forget the question
    return reply;
  }
  messages_.push_back({"assistant", reply.result.text});
  return reply;
}

void Conversation::clear() {
  messages_.clear();
  session_.clear();
}

void Conversation::set_system_prompt(std::string text) { system_ = std::move(text); }

}  // namespace ember
