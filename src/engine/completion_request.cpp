#include "engine/completion_request.h"

#include <cmath>
#include <limits>

#include "engine/output_constraint.h"
#include "grammar/grammar_cache.h"
#include "engine/chat_fields.h"
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

const json::Value& checked_messages(const json::Value& body) {
  const json::Value* messages = json::find(body, "messages");
  if (!messages || !messages->is_array() || json::as_array(*messages).empty())
    fail(ErrorKind::InvalidArgument, "field 'messages' must be a non-empty array");
  check_chat_messages(*messages);
  return *messages;
}

ChatPrompt render(const json::Value& body, const ChatFields& fields, const ChatTemplate& chat_template) {
  ChatPromptInput input;
  input.messages = checked_messages(body);
  input.tools = fields.tools;
  input.template_kwargs = fields.template_kwargs;
  return render_chat_prompt(chat_template, input);
}

// tool_choice "required" (any of the tools) or a named tool, as a grammar over the tools'
// parameter schemas.
std::shared_ptr<const grammar::Grammar> forced_call_grammar(const ChatFields& fields) {
  std::vector<grammar::ToolSchema> tools;
  for (const json::Value& t : json::as_array(fields.tools)) {
    const json::Value& fn = json::at(t, "function");
    const std::string& name = json::as_string(json::at(fn, "name"));
    if (fields.tool_choice.mode == ToolChoice::Mode::Named && name != fields.tool_choice.name) continue;
    const json::Value* params = json::find(fn, "parameters");
    tools.push_back(grammar::ToolSchema{name, params ? *params : json::Value()});
  }
  if (tools.empty()) fail(ErrorKind::InvalidArgument, "field 'tool_choice' names '{}', which is not in 'tools'", fields.tool_choice.name);
  return tool_call_constraint(tools, fields.parallel_tool_calls);
}

// The prompt of a chat request and how its reply is read: a forced tool call's opening is
// written at the end of the prompt and read back as the start of the reply.
void set_chat_prompt(CompletionRequest& r, const json::Value& body, const ChatSetup& chat) {
  const ChatFields fields = read_chat_fields(body);
  ChatPrompt rendered = render(body, fields, *chat.tmpl);
  r.prompt = std::move(rendered.text);
  r.prompt_data = std::move(rendered.data);  // the forced-call opening appended below is template text
  r.chat = true;
  r.parallel_tool_calls = fields.parallel_tool_calls;
  r.reply.format = chat.reply;
  r.reply.reasoning_open = chat.reply.think_tags && prompt_opens_reasoning(r.prompt);
  r.reply.parse_tools = fields.wants_calls() && chat.reply.tools != ToolCallSyntax::None;
  if (r.reply.parse_tools && fields.forces_call()) {
    const bool named = fields.tool_choice.mode == ToolChoice::Mode::Named;
    // Hermes calls are held to the grammar of the tools' parameter schemas; the other
    // syntaxes are made likely by writing the call's opening into the prompt.
    const bool constrained = chat.reply.tools == ToolCallSyntax::Hermes;
    if (constrained) r.grammar = forced_call_grammar(fields);
    r.reply.prefill = (r.reply.reasoning_open ? "</think>\n\n" : "") +
                      (constrained ? std::string() : forced_call_opening(chat.reply.tools, named ? fields.tool_choice.name : ""));
    r.reply.reasoning_open = false;
    r.prompt += r.reply.prefill;
  }
}

}  // namespace

std::string render_chat_request(const json::Value& body, const ChatTemplate& chat_template) {
  if (!body.is_object()) fail(ErrorKind::InvalidArgument, "the request must be a JSON object");
  return render(body, read_chat_fields(body), chat_template).text;
}

CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatSetup& chat) {
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
    for (const char* field : {"tools", "tool_choice", "parallel_tool_calls", "reasoning_effort", "chat_template_kwargs"})
      if (const json::Value* v = json::find(body, field); v && !v->is_null())
        fail(ErrorKind::InvalidArgument, "field '{}' is for chat requests ('messages')", field);
  } else {
    set_chat_prompt(r, body, chat);
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
  if (std::shared_ptr<const grammar::Grammar> g = output_constraint(body)) {
    if (r.grammar) fail(ErrorKind::InvalidArgument, "field 'response_format' cannot be combined with a forced tool call ('tool_choice')");
    r.grammar = std::move(g);
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
  // Markers that are control tokens of their vocabularies must reach the reply parser.
  const ToolCallSyntax syntax = request.reply.format.tools;
  s.render_special = syntax == ToolCallSyntax::Harmony ||
                     (request.reply.parse_tools && (syntax == ToolCallSyntax::Mistral || syntax == ToolCallSyntax::Llama3Json));
  s.top_logprobs = request.top_logprobs;
  if (request.grammar) s.grammar = grammar::token_grammar(request.grammar, tok);
  return s;
}

}  // namespace ember
