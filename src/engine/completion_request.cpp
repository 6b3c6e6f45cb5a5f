#include "engine/completion_request.h"

#include <cmath>
#include <limits>

#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace ember {
namespace {

double number(const json::Value& v, const char* field, double lo, double hi) {
  if (!v.is_number()) fail(ErrorKind::InvalidArgument, "field '{}' must be a number", field);
  const double d = v.as_double(field);
  if (!(d >= lo && d <= hi)) fail(ErrorKind::InvalidArgument, "field '{}' = {} is outside [{}, {}]", field, d, lo, hi);
  return d;
}

int64_t integer(const json::Value& v, const char* field, int64_t lo, int64_t hi) {
  if (!v.is_integer()) fail(ErrorKind::InvalidArgument, "field '{}' must be an integer", field);
  const int64_t i = v.as_int(field);
  if (i < lo || i > hi) fail(ErrorKind::InvalidArgument, "field '{}' = {} is outside [{}, {}]", field, i, lo, hi);
  return i;
}

std::vector<ChatMessage> messages_of(const json::Value& v) {
  if (!v.is_array() || v.as_array().empty())
    fail(ErrorKind::InvalidArgument, "field 'messages' must be a non-empty array");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const json::Value& m = v.as_array()[i];
    const json::Value* role = m.find("role");
    const json::Value* content = m.find("content");
    if (!m.is_object() || !role || !role->is_string() || !content || !content->is_string())
      fail(ErrorKind::InvalidArgument, "messages[{}] must be an object with string 'role' and 'content'", i);
    const std::string& r = role->as_string();
    if (r != "system" && r != "user" && r != "assistant")
      fail(ErrorKind::InvalidArgument, "messages[{}].role '{}' is not system, user or assistant", i, r);
    out.push_back(ChatMessage{r, content->as_string()});
  }
  return out;
}

std::vector<std::string> stops_of(const json::Value& v) {
  constexpr size_t kMaxStops = 4, kMaxStopBytes = 256;
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) {
    out.push_back(v.as_string());
  } else if (v.is_array()) {
    for (const json::Value& s : v.as_array()) {
      if (!s.is_string()) fail(ErrorKind::InvalidArgument, "field 'stop' must be a string or an array of strings");
      out.push_back(s.as_string());
    }
  } else {
    fail(ErrorKind::InvalidArgument, "field 'stop' must be a string or an array of strings");
  }
  if (out.size() > kMaxStops) fail(ErrorKind::InvalidArgument, "field 'stop' has {} strings, at most {}", out.size(), kMaxStops);
  for (const std::string& s : out)
    if (s.empty() || s.size() > kMaxStopBytes)
      fail(ErrorKind::InvalidArgument, "field 'stop' strings must be 1 to {} bytes", kMaxStopBytes);
  return out;
}

}  // namespace

CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatTemplate& chat_template) {
  if (!body.is_object()) fail(ErrorKind::InvalidArgument, "the request must be a JSON object");
  CompletionRequest r;
  r.sampling = defaults.sampling;
  r.max_tokens = defaults.max_tokens;
  const json::Value* prompt = body.find("prompt");
  const json::Value* messages = body.find("messages");
  if ((prompt != nullptr) == (messages != nullptr))
    fail(ErrorKind::InvalidArgument, "give exactly one of 'prompt' and 'messages'");
  if (prompt) {
    if (!prompt->is_string() || prompt->as_string().empty())
      fail(ErrorKind::InvalidArgument, "field 'prompt' must be a non-empty string");
    r.prompt = prompt->as_string();
  } else {
    r.prompt = chat_template.render(messages_of(*messages), /*add_generation_prompt=*/true);
    r.chat = true;
  }
  constexpr int64_t kMaxTokens = 1 << 20;
  for (const char* field : {"max_tokens", "max_completion_tokens"})
    if (const json::Value* v = body.find(field); v && !v->is_null()) r.max_tokens = static_cast<int>(integer(*v, field, 0, kMaxTokens));
  SamplingParams& s = r.sampling;
  if (const json::Value* v = body.find("temperature"); v && !v->is_null()) s.temperature = static_cast<float>(number(*v, "temperature", 0, 2));
  if (const json::Value* v = body.find("top_p"); v && !v->is_null()) s.top_p = static_cast<float>(number(*v, "top_p", 0, 1));
  if (const json::Value* v = body.find("min_p"); v && !v->is_null()) s.min_p = static_cast<float>(number(*v, "min_p", 0, 1));
  if (const json::Value* v = body.find("top_k"); v && !v->is_null()) s.top_k = static_cast<int>(integer(*v, "top_k", -1, 1 << 20));
  if (const json::Value* v = body.find("presence_penalty"); v && !v->is_null())
    s.presence_penalty = static_cast<float>(number(*v, "presence_penalty", -2, 2));
  if (const json::Value* v = body.find("frequency_penalty"); v && !v->is_null())
    s.frequency_penalty = static_cast<float>(number(*v, "frequency_penalty", -2, 2));
  if (const json::Value* v = body.find("seed"); v && !v->is_null())
    s.seed = static_cast<uint64_t>(integer(*v, "seed", 0, std::numeric_limits<int64_t>::max()));
  if (const json::Value* v = body.find("n"); v && !v->is_null()) integer(*v, "n", 1, 1);  // one choice only
  if (const json::Value* v = body.find("stop")) r.stop = stops_of(*v);
  validate(s);
  return r;
}

}  // namespace ember
