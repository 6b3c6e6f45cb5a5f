// `ember serve`: an OpenAI-compatible HTTP server on the continuous-batching scheduler.
//
//   ember serve -m model.gguf [--host 127.0.0.1] [--port 8080] [-np 16] [--api-key KEY] [-c N]
//               [--cors-origins https://app.example,http://localhost:5173 | '*']
//               [--draft-ngram 3 | --draft small.gguf] [--draft-max 8]
//
// It listens first (GET /health answers 503 while the model loads), then serves until
// SIGTERM or SIGINT: /health and new requests get 503 at once, running ones finish
// (--shutdown finish, the default; streams up to their `data: [DONE]`) or end at once
// (--shutdown cancel), and it exits 0, after --drain-grace seconds at the earliest
// (deploy/ has load-balancer setups built on this).
#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "cli/chat_setup.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "engine/batch_job.h"
#include "engine/draft/draft_setup.h"
#include "server/http_server.h"
#include "server/metrics_routing.h"
#include "cli/chat_template_flags.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace ember::cli {
namespace {

struct ServeFlags {
  GenerationFlags gen;
  server::ServerOptions http;
  std::string alias;
  ChatTemplateFlags chat_template;
  std::string shutdown = "finish";
  std::string metrics_compat;
  int n_parallel = 16;
  int batch_tokens = 512;
  int kv_size = 0;
  int max_queue = 64;
  double drain_grace_s = 0;
  size_t max_body_kib = 4096;
};

void check(const ServeFlags& f) {
  if (f.n_parallel < 1 || f.n_parallel > 256) fail(ErrorKind::InvalidArgument, "-np {} must be in 1..256", f.n_parallel);
  if (f.batch_tokens < 1) fail(ErrorKind::InvalidArgument, "--batch-tokens {} must be at least 1", f.batch_tokens);
  if (f.kv_size < 0) fail(ErrorKind::InvalidArgument, "--kv-size {} must be >= 0", f.kv_size);
  if (!(f.drain_grace_s >= 0 && f.drain_grace_s <= 3600))
    fail(ErrorKind::InvalidArgument, "--drain-grace {} must be in 0..3600 seconds", f.drain_grace_s);
  if (f.max_queue < 0) fail(ErrorKind::InvalidArgument, "--max-queue {} must be >= 0", f.max_queue);
  if (f.http.port < 0 || f.http.port > 65535) fail(ErrorKind::InvalidArgument, "--port {} must be in 0..65535", f.http.port);
  if (f.http.max_connections < 1) fail(ErrorKind::InvalidArgument, "--max-connections must be at least 1");
  if (f.shutdown != "finish" && f.shutdown != "cancel")
    fail(ErrorKind::InvalidArgument, "--shutdown '{}' must be finish or cancel", f.shutdown);
  sequence_drafting(f.gen.draft);  // refuses --draft MODEL with --draft-ngram N
  server::parse_metrics_compat(f.metrics_compat);
}

// SIGTERM and SIGINT wait for sigwait() in the main thread; every thread started later
// inherits the mask, so no handler runs inside the server.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a signal
  return set;
}

int run_serve(ServeFlags& f) {
  finish_generation_flags(f.gen);
  check(f);
  const sigset_t stop_signals = block_stop_signals();
  f.http.max_body_bytes = f.max_body_kib * 1024;
  f.http.metrics_vllm_names = server::parse_metrics_compat(f.metrics_compat);
  server::ServerMetrics metrics;
  server::HttpServer http(f.http, metrics);
  const int port = http.bind();
  std::thread listener([&] { http.listen(); });
  fmt::print(stderr, "serve: listening on http://{}:{} (loading {})\n", f.http.host, port, f.gen.model);

  ModelSetup setup = model_setup(f.gen);
  setup.context.n_seq = f.n_parallel;
  setup.context.n_batch = std::max(setup.context.n_batch, f.batch_tokens);
  setup.context.kv_blocks = (f.kv_size + 31) / 32;
  LoadedModel m;
  DraftContext draft_model;
  try {
    m = load_model(setup);
    if (!f.gen.draft.model_path.empty())
      draft_model = load_draft_context(f.gen.draft, *m.context, *m.tokenizer, *m.pool, setup.verbose);
  } catch (...) {
    http.stop();
    listener.join();
    throw;
  }
  std::string warning;
  const ChatTemplate tmpl = load_chat_template(m.model->gguf(), f.chat_template, m.tokenizer->vocab(), &warning);
  if (!warning.empty()) fmt::print(stderr, "{}\n", warning);
  server::EngineOptions eo{SchedulerOptions{f.n_parallel, f.batch_tokens, draft_model.context.get()}, f.max_queue,
                          sequence_drafting(f.gen.draft)};
  auto engine = std::make_unique<server::ServingEngine>(*m.context, *m.tokenizer, eo, metrics);
  server::ServedModel served;
  served.engine = engine.get();
  served.tokenizer = m.tokenizer.get();
  served.api.model_name = f.alias.empty() ? std::filesystem::path(f.gen.model).filename().string() : f.alias;
  served.api.defaults = CompletionDefaults{sampling_params(f.gen), f.gen.n_predict};
  served.api.chat = chat_setup(m.model->gguf(), tmpl);
  served.model_path = f.gen.model;
  served.chat_template_text = tmpl.jinja() ? tmpl.jinja_source()
                                           : std::string(m.model->gguf().find_string("tokenizer.chat_template").value_or(""));
  served.slots = f.n_parallel;
  served.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  http.attach(served);
  fmt::print(stderr, "serve: ready: model '{}', {} sequences of {} tokens, {} KV blocks\n", served.api.model_name,
             f.n_parallel, m.context->n_ctx(), engine->snapshot().kv.empty() ? 0 : engine->snapshot().kv[0].total);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(f.drain_grace_s);
  fmt::print(stderr, "serve: {}: {} the running requests, then exiting\n", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             f.shutdown == "finish" ? "finishing" : "cancelling");
  http.start_draining();
  engine->shut_down(f.shutdown == "finish");
  // The sequences are done; their last chunks may still be on their way to the clients.
  if (!http.wait_for_responses(std::chrono::seconds(30)))
    fmt::print(stderr, "serve: some answers were still being written after 30 s; closing them\n");
  // Load balancers learn of the drain from /health; until they have, refuse with 503
  // (which they retry elsewhere) rather than with a closed port.
  std::this_thread::sleep_until(stop_at);
  http.stop();
  listener.join();
  return 0;
}

}  // namespace

void add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching");
  add_model_flags(cmd, flags->gen);
  cmd->add_option("--host", flags->http.host, "address to listen on (loopback by default)")->capture_default_str();
  cmd->add_option("--port", flags->http.port, "port (0: any free one, printed)")->capture_default_str();
  cmd->add_option("--parallel", flags->n_parallel, "sequences decoded together (-np)")->capture_default_str();
  cmd->add_option("--api-key", flags->http.api_key, "require 'Authorization: Bearer KEY' (all but /health)");
  cmd->add_option("--cors-origins", flags->http.cors_origins, "origins browsers may call from (comma-separated; * for any)")
      ->delimiter(',');
  cmd->add_option("--alias", flags->alias, "the model's name in the API (default: the file name)");
  cmd->add_option("-n,--n-predict", flags->gen.n_predict, "max_tokens of requests that give none (-1: the context)")
      ->capture_default_str();
  cmd->add_option("--batch-tokens", flags->batch_tokens, "tokens per scheduler step (prompt chunks + decodes)")
      ->capture_default_str();
  cmd->add_option("--kv-size", flags->kv_size, "tokens the KV block pool holds in all (0: every sequence at -c)")
      ->capture_default_str();
  cmd->add_option("--max-queue", flags->max_queue, "requests waiting for a sequence before new ones get 503")
      ->capture_default_str();
  cmd->add_option("--max-connections", flags->http.max_connections, "connections served at once")->capture_default_str();
  cmd->add_option("--max-body", flags->max_body_kib, "largest request body in KiB (413 beyond)")->capture_default_str();
  cmd->add_option("--timeout", flags->http.read_timeout_s, "seconds a client may take to send its request")
      ->capture_default_str();
  cmd->add_option("--shutdown", flags->shutdown, "on SIGTERM: finish or cancel the running requests")->capture_default_str();
  cmd->add_option("--drain-grace", flags->drain_grace_s,
                  "after SIGTERM, answer 503 for at least this many seconds before closing the port (for load balancers)")
      ->capture_default_str();
  cmd->add_flag("--metrics-no-auth", flags->http.metrics_no_auth, "GET /metrics without the API key (for scrapers)");
  cmd->add_option("--metrics-compat", flags->metrics_compat,
                  "vllm: /metrics also under vLLM's names (vllm:num_requests_running ...) for routers");
  add_chat_template_flags(cmd, flags->chat_template);
  add_sampling_flags(cmd, flags->gen);
  add_draft_flags(cmd, flags->gen);
  cmd->callback([flags] { set_exit_code(guarded("serve", [&] { return run_serve(*flags); })); });
}

}  // namespace ember::cli
