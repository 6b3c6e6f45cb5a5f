// A chat conversation: the messages, their rendering with the model's chat template, and
// replies generated through a Generator (so each turn decodes only what is new): a Session
// for plain decoding, a DraftRunner for speculative decoding (whose draft model follows the
// same rendered history, see engine/draft_model.h).
//
// Context policy at turn boundaries: when the rendered conversation plus room for a reply
// (min(256, n_ctx / 4) tokens) no longer fits, the oldest user/assistant messages are
// dropped (the system prompt stays) and the caller is told how many. Within a reply the
// Context's policy applies: stop at a full context (default) or shift (--context-shift).
//
// Interrupted replies: the partial reply is KEPT as the assistant's message (the user saw
// it, and the KV cache already holds it). A reply interrupted before its first token
// (during prefill) drops the user's message instead, so the conversation never holds an
// unanswered question.
//
// End of a reply: at the tokenizer's end-of-generation tokens, which hold the template's
// end-of-turn marker when it is a special token (<end_of_turn>, <|im_end|>, </s>). When the
// vocabulary reads the marker as plain text (a template chosen by --chat-template that does
// not fit the model, or "plain"'s "\nUser:"), the reply ends at that text instead: the
// Generator interface cannot stop mid-reply, so such replies are generated in short runs
// (each continuing the cache exactly, see generate_until_stop) and the text is held back
// while it could be the start of the marker, which is never shown nor kept.
#pragma once
#include <string>
#include <vector>

#include "engine/session.h"
#include "tokenizer/chat_template.h"

namespace ember {

class Tokenizer;

class Conversation {
 public:
  Conversation(Generator& generator, const Tokenizer& tok, ChatTemplate chat_template, std::string system_prompt);

  struct Reply {
    GenerationResult result;
    int dropped_messages = 0;  // oldest messages removed to make room for this turn
  };

  // Adds the user's message and generates the reply, streaming its text to on_text.
  // Throws Error(ContextFull) when the message alone (with the system prompt) cannot fit;
  // the conversation is then unchanged.
  Reply reply(const std::string& user_text, const GenerateOptions& options, const Generator::TextSink& on_text);

  void clear();  // forgets the messages (keeps the system prompt) and the KV cache
  void set_system_prompt(std::string text);  // applies from the next turn on
  const std::string& system_prompt() const { return system_; }
  const std::vector<ChatMessage>& messages() const { return messages_; }  // without the system prompt
  const ChatTemplate& chat_template() const { return template_; }

  int context_used() const { return static_cast<int>(generator_.cached_tokens().size()); }
  int n_ctx() const { return generator_.n_ctx(); }

 private:
  std::vector<int32_t> render_tokens(bool add_generation_prompt) const;
  GenerationResult generate_until_stop(std::vector<int32_t> prompt, const GenerateOptions& options,
                                       const Generator::TextSink& on_text);

  Generator& generator_;
  const Tokenizer& tok_;
  ChatTemplate template_;
  std::vector<std::string> stops_;  // the end-of-turn marker when it is plain text, else empty
  std::string system_;
  std::vector<ChatMessage> messages_;
};

}  // namespace ember
