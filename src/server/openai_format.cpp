#include "server/openai_format.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "tokenizer/tokenizer.h"

namespace ember::server {
namespace {

using Json = nlohmann::ordered_json;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Bytes of a token piece as a JSON array of numbers (OpenAI's "bytes"), and its text.
Json token_entry(const Tokenizer& tok, int32_t id, float logprob) {
  const std::string_view piece = tok.piece(id);
  Json bytes = Json::array();
  for (unsigned char c : piece) bytes.push_back(c);
  return Json{{"token", std::string(piece)}, {"logprob", logprob}, {"bytes", bytes}};
}

Json chat_logprobs(const std::vector<TokenLogprobs>& lps, const Tokenizer& tok) {
  Json content = Json::array();
  for (const TokenLogprobs& lp : lps) {
    Json entry = token_entry(tok, lp.token, lp.logprob);
    Json top = Json::array();
    for (const auto& [id, p] : lp.top) top.push_back(token_entry(tok, id, p));
    entry["top_logprobs"] = top;
    content.push_back(entry);
  }
  return Json{{"content", content}};
}

// The legacy completions shape: parallel arrays, top_logprobs as {token: logprob} maps.
Json completion_logprobs(const std::vector<TokenLogprobs>& lps, const Tokenizer& tok) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  size_t offset = 0;
  for (const TokenLogprobs& lp : lps) {
    const std::string piece(tok.piece(lp.token));
    tokens.push_back(piece);
    token_logprobs.push_back(lp.logprob);
    Json alternatives = Json::object();
    for (const auto& [id, p] : lp.top) alternatives[std::string(tok.piece(id))] = p;
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += piece.size();
  }
  return Json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

Json usage(const StreamResult& r) {
  return Json{{"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.completion_tokens},
              {"total_tokens", r.prompt_tokens + r.completion_tokens},
              {"prompt_tokens_details", Json{{"cached_tokens", r.cached_tokens}}}};
}

Json reason(const std::string& r) { return r.empty() ? Json(nullptr) : Json(r); }

Json call_json(const ToolCall& c) {
  return Json{{"id", c.id}, {"type", "function"}, {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}};
}

class OpenAiWriter final : public ReplyWriter {
 public:
  OpenAiWriter(const ResponseHeader& h, const OpenAiOptions& o, const Tokenizer& tok)
      : h_(h), o_(o), tok_(tok), chat_(h.endpoint == Endpoint::ChatCompletions) {}

  std::string whole(const ParsedReply& reply, const std::vector<TokenLogprobs>& logprobs, const StreamResult& result) override {
    Json choice{{"index", 0}};
    if (chat_) choice["message"] = message(reply);
    else choice["text"] = reply.content;
    choice["logprobs"] = logprobs_json(logprobs);
    choice["finish_reason"] = reason(finish_reason_of(result, !reply.tool_calls.empty()));
    Json j = envelope();
    j["choices"] = Json::array({choice});
    j["usage"] = usage(result);
    return dump(j);
  }

  std::string stream_start() override {
    return chat_ ? chunk(Json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr) : std::string();
  }

  std::string stream_pieces(const ReplyPieces& pieces, const std::vector<TokenLogprobs>& logprobs) override {
    std::string out;
    Json lp = logprobs_json(logprobs);
    bool pending = !logprobs.empty();
    auto emit = [&](Json delta) {
      out += chunk(std::move(delta), lp, nullptr);
      lp = logprobs_json({});  // the tokens' log-probabilities go with the first chunk
      pending = false;
    };
    for (const ReplyPiece& p : pieces) {
      if (!chat_) {
        emit(Json(p.text));
      } else if (p.kind == ReplyPiece::Kind::Content) {
        emit(Json{{"content", p.text}});
      } else if (p.kind == ReplyPiece::Kind::Reasoning) {
        emit(Json{{"reasoning_content", p.text}, {"reasoning", p.text}});
      } else {
        const int index = calls_++;
        emit(Json{{"tool_calls", Json::array({Json{{"index", index}, {"id", p.call.id}, {"type", "function"},
                                                    {"function", Json{{"name", p.call.name}, {"arguments", ""}}}}})}});
        emit(Json{{"tool_calls", Json::array({Json{{"index", index}, {"function", Json{{"arguments", p.call.arguments}}}}})}});
      }
    }
    if (pending) emit(chat_ ? Json::object() : Json(""));
    return out;
  }

  std::string stream_end(const StreamResult& result) override {
    std::string out = chunk(chat_ ? Json::object() : Json(""), nullptr, reason(finish_reason_of(result, calls_ > 0)));
    if (o_.include_usage) {
      Json j = envelope();
      j["choices"] = Json::array();
      j["usage"] = usage(result);
      out += sse_event(dump(j));
    }
    return out + kDoneEvent;
  }

  std::string stream_error(const ApiError& error) override { return sse_event(error_body(error)) + kDoneEvent; }

 private:
  Json envelope() const {
    const char* object = chat_ ? (streaming_ ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return Json{{"id", h_.id}, {"object", object}, {"created", h_.created}, {"model", h_.model}};
  }

  Json message(const ParsedReply& reply) const {
    Json m{{"role", "assistant"}, {"content", reply.content.empty() && !reply.tool_calls.empty() ? Json(nullptr) : Json(reply.content)}};
    if (!reply.reasoning.empty()) m["reasoning_content"] = m["reasoning"] = reply.reasoning;
    if (!reply.tool_calls.empty()) {
      Json calls = Json::array();
      for (const ToolCall& c : reply.tool_calls) calls.push_back(call_json(c));
      m["tool_calls"] = calls;
    }
    return m;
  }

  Json logprobs_json(const std::vector<TokenLogprobs>& lps) const {
    if (!o_.with_logprobs) return nullptr;
    return chat_ ? chat_logprobs(lps, tok_) : completion_logprobs(lps, tok_);
  }

  // One chunk: `delta` is the chat delta, or the completion's text.
  std::string chunk(Json delta, Json logprobs, Json finish) {
    streaming_ = true;
    Json choice{{"index", 0}};
    if (chat_) choice["delta"] = std::move(delta);
    else choice["text"] = std::move(delta);
    choice["logprobs"] = o_.with_logprobs ? std::move(logprobs) : Json(nullptr);
    choice["finish_reason"] = std::move(finish);
    Json j = envelope();
    j["choices"] = Json::array({choice});
    return sse_event(dump(j));
  }

  ResponseHeader h_;
  OpenAiOptions o_;
  const Tokenizer& tok_;
  bool chat_;
  bool streaming_ = false;
  int calls_ = 0;  // streamed so far: the next call's index
};

}  // namespace

ResponseHeader make_header(Endpoint endpoint, const std::string& model) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const bool chat = endpoint == Endpoint::ChatCompletions;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return ResponseHeader{endpoint, fmt::format("{}-{:016x}", chat ? "chatcmpl" : "cmpl", rng()),
                        std::chrono::duration_cast<std::chrono::seconds>(now).count(), model};
}

std::unique_ptr<ReplyWriter> openai_writer(const ResponseHeader& h, const OpenAiOptions& options, const Tokenizer& tok) {
  return std::make_unique<OpenAiWriter>(h, options, tok);
}

}  // namespace ember::server
