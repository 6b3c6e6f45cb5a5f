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

Json logprobs_json(const ResponseHeader& h, const std::vector<TokenLogprobs>& lps, bool with, const Tokenizer& tok) {
  if (!with) return nullptr;
  return h.endpoint == Endpoint::ChatCompletions ? chat_logprobs(lps, tok) : completion_logprobs(lps, tok);
}

Json usage(const StreamResult& r) {
  return Json{{"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.completion_tokens},
              {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

Json envelope(const ResponseHeader& h, const char* object) {
  return Json{{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

Json reason(const std::string& r) { return r.empty() ? Json(nullptr) : Json(r); }

}  // namespace

ResponseHeader make_header(Endpoint endpoint, const std::string& model) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const bool chat = endpoint == Endpoint::ChatCompletions;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return ResponseHeader{endpoint, fmt::format("{}-{:016x}", chat ? "chatcmpl" : "cmpl", rng()),
                        std::chrono::duration_cast<std::chrono::seconds>(now).count(), model};
}

std::string response_body(const ResponseHeader& h, const std::string& text, const std::vector<TokenLogprobs>& logprobs,
                          bool with_logprobs, const StreamResult& result, const Tokenizer& tok) {
  const bool chat = h.endpoint == Endpoint::ChatCompletions;
  Json choice{{"index", 0}};
  if (chat) choice["message"] = Json{{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  choice["logprobs"] = logprobs_json(h, logprobs, with_logprobs, tok);
  choice["finish_reason"] = reason(result.finish_reason);
  Json j = envelope(h, chat ? "chat.completion" : "text_completion");
  j["choices"] = Json::array({choice});
  j["usage"] = usage(result);
  return dump(j);
}

std::string chunk_event(const ResponseHeader& h, const std::string& text, const std::vector<TokenLogprobs>& logprobs,
                        bool with_logprobs, const std::string& finish_reason, bool first, const Tokenizer& tok) {
  const bool chat = h.endpoint == Endpoint::ChatCompletions;
  Json choice{{"index", 0}};
  if (chat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs_json(h, logprobs, with_logprobs, tok);
  choice["finish_reason"] = reason(finish_reason);
  Json j = envelope(h, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array({choice});
  return "data: " + dump(j) + "\n\n";
}

std::string usage_event(const ResponseHeader& h, const StreamResult& result) {
  Json j = envelope(h, h.endpoint == Endpoint::ChatCompletions ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage(result);
  return "data: " + dump(j) + "\n\n";
}

std::string error_event(const std::string& error_body) { return "data: " + error_body + "\n\n"; }

}  // namespace ember::server
