#include "engine/completion_request.h"

#include <cmath>
#include <limits>

#include "template/chat_prompt.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember {
namespace {

double number(const json::Value& v, const char* field, double lo, double hi) {
  if (!v.is_number()) fail(ErrorKind::InvalidArgument, "field '{}' must be a number", field);
  const double d = json::as_double(v, field);
  if (!(d >= lo && d <= hi)) fail(ErrorKind::InvalidArgument, "field '{}' = {} is outside [{}, {}]", field, d, lo, hi);
  return d;
}

int64_t integer(const json::Value& v, const char* field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) fail(ErrorKind::InvalidArgument, "field '{}' must be an integer", field);
  const int64_t i = json::as_int(v, field);
  if (i < lo || i > hi) fail(ErrorKind::InvalidArgument, "field '{}' = {} is outside [{}, {}]", field, i, lo, hi);
  return i;
}

std::vector<std::string> stops_of(const json::Value& v) {
  constexpr size_t kMaxStops = 4, kMaxStopBytes = 256;
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) {
    out.push_back(json::as_string(v));
  } else if (v.is_array()) {
    for (const json::Value& s : json::as_array(v)) {
      if (!s.is_string()) fail(ErrorKind::InvalidArgument, "field 'stop' must be a string or an array of strings");
      out.push_back(json::as_string(s));
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

// Chat requests say logprobs: true and top_logprobs: N; completions say logprobs: N.
int logprobs_of(const json::Value& body, bool chat) {
  const json::Value* lp = json::find(body, "logprobs");
  const json::Value* top = json::find(body, "top_logprobs");
  if (!chat) {
    if (top && !top->is_null()) fail(ErrorKind::InvalidArgument, "field 'top_logprobs' is for chat requests; give 'logprobs': N");
    return lp && !lp->is_null() ? static_cast<int>(integer(*lp, "logprobs", 0, 5)) : -1;
  }
  if (lp && !lp->is_null() && !lp->is_boolean()) fail(ErrorKind::InvalidArgument, "field 'logprobs' must be a boolean");
  const bool on = lp && lp->is_boolean() && json::as_bool(*lp);
  const int n = top && !top->is_null() ? static_cast<int>(integer(*top, "top_logprobs", 0, 20)) : 0;
  if (!on && top && !top->is_null()) fail(ErrorKind::InvalidArgument, "field 'top_logprobs' needs 'logprobs': true");
  return on ? n : -1;
}

}  // namespace

CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatTemplate& chat_template) {
  if (!body.is_object()) fail(ErrorKind::InvalidArgument, "the request must be a JSON object");
  CompletionRequest r;
  r.sampling = defaults.sampling;
  r.max_tokens = defaults.max_tokens;
  const json::Value* prompt = json::find(body, "prompt");
  const json::Value* messages = json::find(body, "messages");
  if ((prompt != nullptr) == (messages != nullptr))
    fail(ErrorKind::InvalidArgument, "give exactly one of 'prompt' and 'messages'");
  if (prompt) {
    if (!prompt->is_string() || json::as_string(*prompt).empty())
      fail(ErrorKind::InvalidArgument, "field 'prompt' must be a non-empty string");
    r.prompt = json::as_string(*prompt);
  } else {
    if (!messages->is_array() || json::as_array(*messages).empty())
      fail(ErrorKind::InvalidArgument, "field 'messages' must be a non-empty array");
    ChatPromptInput input;
    input.messages = *messages;
    ChatPrompt rendered = render_chat_prompt(chat_template, input);
    r.prompt = std::move(rendered.text);
    r.prompt_data = std::move(rendered.data);
    r.chat = true;
  }
  constexpr int64_t kMaxTokens = 1 << 20;
  for (const char* field : {"max_tokens", "max_completion_tokens"})
    if (const json::Value* v = json::find(body, field); v && !v->is_null()) r.max_tokens = static_cast<int>(integer(*v, field, 0, kMaxTokens));
  SamplingParams& s = r.sampling;
  if (const json::Value* v = json::find(body, "temperature"); v && !v->is_null()) s.temperature = static_cast<float>(number(*v, "temperature", 0, 2));
  if (const json::Value* v = json::find(body, "top_p"); v && !v->is_null()) s.top_p = static_cast<float>(number(*v, "top_p", 0, 1));
  if (const json::Value* v = json::find(body, "min_p"); v && !v->is_null()) s.min_p = static_cast<float>(number(*v, "min_p", 0, 1));
  if (const json::Value* v = json::find(body, "top_k"); v && !v->is_null()) s.top_k = static_cast<int>(integer(*v, "top_k", -1, 1 << 20));
  if (const json::Value* v = json::find(body, "presence_penalty"); v && !v->is_null())
    s.presence_penalty = static_cast<float>(number(*v, "presence_penalty", -2, 2));
  if (const json::Value* v = json::find(body, "frequency_penalty"); v && !v->is_null())
    s.frequency_penalty = static_cast<float>(number(*v, "frequency_penalty", -2, 2));
  if (const json::Value* v = json::find(body, "seed"); v && !v->is_null())
    s.seed = static_cast<uint64_t>(integer(*v, "seed", 0, std::numeric_limits<int64_t>::max()));
  if (const json::Value* v = json::find(body, "n"); v && !v->is_null()) integer(*v, "n", 1, 1);  // one choice only
  if (const json::Value* v = json::find(body, "stop")) r.stop = stops_of(*v);
  r.top_logprobs = logprobs_of(body, r.chat);
  if (const json::Value* v = json::find(body, "ignore_eos"); v && !v->is_null()) {
    if (!v->is_boolean()) fail(ErrorKind::InvalidArgument, "field 'ignore_eos' must be a boolean");
    r.ignore_eos = json::as_bool(*v);
  }
  validate(s);
  return r;
}

SequenceRequest sequence_request(const CompletionRequest& request, const Tokenizer& tok) {
  SequenceRequest s;
  s.prompt = request.chat ? tokenize_chat_prompt(tok, ChatPrompt{request.prompt, request.prompt_data})
                         : tok.encode(request.prompt, /*add_special=*/true, /*parse_special=*/true);
  s.sampling = request.sampling;
  s.max_tokens = request.max_tokens;
  if (!request.ignore_eos) s.stop_tokens = tok.eog_ids();
  s.stop_strings = request.stop;
  s.top_logprobs = request.top_logprobs;
  return s;
}

}  // namespace ember
