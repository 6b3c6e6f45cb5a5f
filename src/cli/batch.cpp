// `ember batch`: offline generation for a file of requests through the continuous-batching
// scheduler.
//
//   ember batch -m model.gguf -f requests.jsonl [-np 8] [-o out.jsonl]
//               [--draft-ngram 3 | --draft small.gguf] [--draft-max 8]
//
// Each input line is one JSON object with OpenAI request fields (engine/completion_request.h);
// the sampling flags give the defaults of fields a line leaves out, -n the default
// max_tokens. A chat line may carry tools, tool_choice, parallel_tool_calls, reasoning_effort
// and chat_template_kwargs, as a chat completions request does. Output: one JSON line per
// request, in input order: index, text, prompt_tokens, completion_tokens, finish_reason,
// ttft_ms, total_ms; a chat reply's reasoning and tool calls are read from its text as the
// server reads them: text then holds only the answer, and reasoning_content and tool_calls
// (OpenAI's shape; finish_reason "tool_calls") appear when there are any. A bad line is an error naming it
// before anything runs. stderr: a progress bar and the summary (requests/s, tokens/s, TTFT
// and inter-token latency percentiles).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/chat_setup.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "engine/batch_job.h"
#include "engine/draft/draft_setup.h"
#include "cli/chat_template_flags.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

struct BatchFlags {
  GenerationFlags gen;
  std::string requests;
  std::string output;
  ChatTemplateFlags chat_template;
  int n_parallel = 8;
  int batch_tokens = 512;
  int kv_size = 0;
};

std::vector<CompletionRequest> read_requests(const std::string& path, const CompletionDefaults& defaults,
                                             const ChatSetup& chat) {
  std::istringstream in(read_text_file(path));
  std::vector<CompletionRequest> out;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(parse_completion_request(json::parse(line, path), defaults, chat));
    } catch (const Error& e) {
      fail(ErrorKind::InvalidArgument, "{}:{}: {}", path, line_no, e.what());
    }
  }
  if (out.empty()) fail(ErrorKind::InvalidArgument, "{}: no requests", path);
  return out;
}

// A chat reply's reasoning and calls as extra fields (empty when it has none).
std::string reply_fields(const ParsedReply& reply) {
  std::string out;
  if (!reply.reasoning.empty()) out += ",\"reasoning_content\":" + json::quote(reply.reasoning);
  if (reply.tool_calls.empty()) return out;
  out += ",\"tool_calls\":[";
  for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
    const ToolCall& c = reply.tool_calls[i];
    out += fmt::format("{}{{\"id\":{},\"type\":\"function\",\"function\":{{\"name\":{},\"arguments\":{}}}}}", i ? "," : "",
                       json::quote(c.id), json::quote(c.name), json::quote(c.arguments));
  }
  return out + "]";
}

std::string result_line(int index, const CompletionRequest& request, const BatchResult& r) {
  ParsedReply reply = parse_reply(request.reply, r.text);
  if (!request.parallel_tool_calls && reply.tool_calls.size() > 1) reply.tool_calls.resize(1);
  const std::string finish = !reply.tool_calls.empty() && r.finish_reason == "stop" ? "tool_calls" : r.finish_reason;
  return fmt::format(
      "{{\"index\":{},\"text\":{},\"prompt_tokens\":{},\"completion_tokens\":{},\"finish_reason\":{},"
      "\"ttft_ms\":{:.2f},\"total_ms\":{:.2f}{}}}",
      index, json::quote(reply.content), r.prompt_tokens, r.completion_tokens, json::quote(finish), r.ttft_ms,
      r.total_ms, reply_fields(reply));
}

int run_batch(BatchFlags& f) {
  finish_generation_flags(f.gen);
  if (f.n_parallel < 1 || f.n_parallel > 256) fail(ErrorKind::InvalidArgument, "-np {} must be in 1..256", f.n_parallel);
  if (f.batch_tokens < 1) fail(ErrorKind::InvalidArgument, "--batch-tokens {} must be at least 1", f.batch_tokens);
  if (f.kv_size < 0) fail(ErrorKind::InvalidArgument, "--kv-size {} must be >= 0", f.kv_size);
  const SequenceDrafting draft = sequence_drafting(f.gen.draft);
  ModelSetup setup = model_setup(f.gen);
  setup.context.n_seq = f.n_parallel;
  setup.context.n_batch = std::max(setup.context.n_batch, f.batch_tokens);
  setup.context.kv_blocks = (f.kv_size + 31) / 32;
  LoadedModel m = load_model(setup);
  DraftContext draft_model;
  if (draft.model) draft_model = load_draft_context(f.gen.draft, *m.context, *m.tokenizer, *m.pool, setup.verbose);

  std::string warning;
  const ChatTemplate tmpl = load_chat_template(m.model->gguf(), f.chat_template, m.tokenizer->vocab(), &warning);
  CompletionDefaults defaults;
  defaults.sampling = sampling_params(f.gen);
  defaults.max_tokens = f.gen.n_predict;
  const std::vector<CompletionRequest> requests = read_requests(f.requests, defaults, chat_setup(m.model->gguf(), tmpl));
  if (!warning.empty() && std::any_of(requests.begin(), requests.end(), [](const auto& r) { return r.chat; }))
    fmt::print(stderr, "{}\n", warning);

  std::FILE* out = stdout;
  if (!f.output.empty() && !(out = std::fopen(f.output.c_str(), "w")))
    fail(ErrorKind::Io, "cannot write {}", f.output);
  ProgressBar bar("batch");
  BatchSummary summary;
  const std::vector<BatchResult> results =
      run_batch_job(*m.context, *m.tokenizer, requests, SchedulerOptions{f.n_parallel, f.batch_tokens, draft_model.context.get()}, draft, summary,
                    [&](int done, int total) { bar.update(static_cast<float>(done) / total); });
  bar.finish();
  for (size_t i = 0; i < results.size(); ++i) fmt::print(out, "{}\n", result_line(static_cast<int>(i), requests[i], results[i]));
  if (out != stdout && std::fclose(out) != 0) fail(ErrorKind::Io, "cannot write {}", f.output);
  fmt::print(stderr, "{}", format_batch_summary(summary));
  return 0;
}

}  // namespace

void add_batch(CLI::App& app) {
  auto flags = std::make_shared<BatchFlags>();
  flags->gen.n_predict = 128;
  CLI::App* cmd = app.add_subcommand("batch", "Generate for a file of requests (JSON lines), many sequences at once");
  add_model_flags(cmd, flags->gen);
  cmd->add_option("-f,--file", flags->requests, "requests, one JSON object per line (OpenAI fields)")->required();
  cmd->add_option("-o,--output", flags->output, "write the results here (default: stdout)");
  cmd->add_option("-n,--n-predict", flags->gen.n_predict, "max_tokens of requests that give none (-1: no limit)")
      ->capture_default_str();
  cmd->add_option("--parallel", flags->n_parallel, "sequences decoded together (-np)")->capture_default_str();
  cmd->add_option("--batch-tokens", flags->batch_tokens, "tokens per scheduler step (prompt chunks + decodes)")
      ->capture_default_str();
  cmd->add_option("--kv-size", flags->kv_size, "tokens the KV block pool holds in all (0: every sequence at -c)")
      ->capture_default_str();
  add_chat_template_flags(cmd, flags->chat_template);
  add_sampling_flags(cmd, flags->gen);
  add_draft_flags(cmd, flags->gen);
  cmd->callback([flags] { set_exit_code(guarded("batch", [&] { return run_batch(*flags); })); });
}

}  // namespace ember::cli
