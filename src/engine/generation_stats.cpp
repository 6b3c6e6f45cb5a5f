#include "engine/generation_stats.h"

#include <fmt/format.h>

#include "util/json.h"
#include "util/text_width.h"

namespace ember {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::EndOfGeneration: return "eog";
    case StopReason::TokenLimit: return "limit";
    case StopReason::ContextFull: return "context-full";
    case StopReason::Interrupted: return "interrupted";
    case StopReason::GrammarDeadEnd: return "grammar-dead-end";
  }
  return "?";
}

namespace {
double per_second(int count, double ms) { return ms > 0 ? count * 1000.0 / ms : 0.0; }
}  // namespace

double GenerationStats::prompt_tps() const { return per_second(decoded_prompt_tokens(), prompt_ms); }
double GenerationStats::generation_tps() const { return per_second(generated_tokens, generation_ms); }
double GenerationStats::ms_per_token() const { return generated_tokens > 0 ? generation_ms / generated_tokens : 0.0; }

std::string format_stats(const GenerationStats& s, const RunFacts& f) {
  std::string out;
  out += fmt::format("load:       {:10.2f} ms\n", f.load_ms);
  out += fmt::format("prompt:     {:10.2f} ms / {:5d} tokens ({:.2f} tok/s){}\n", s.prompt_ms, s.decoded_prompt_tokens(),
                     s.prompt_tps(), s.reused_tokens ? fmt::format(", {} reused from cache", s.reused_tokens) : "");
  out += fmt::format("first token:{:10.2f} ms\n", s.ttft_ms);
  out += fmt::format("generation: {:10.2f} ms / {:5d} tokens ({:.2f} tok/s, {:.2f} ms/token)\n", s.generation_ms,
                     s.generated_tokens, s.generation_tps(), s.ms_per_token());
  out += fmt::format("context:    {} / {} tokens{}\n", s.context_used, s.n_ctx,
                     s.shifted_tokens ? fmt::format(" ({} old tokens dropped by context shift)", s.shifted_tokens) : "");
  out += fmt::format("stop:       {}   seed: {}{}\n", stop_reason_name(s.stop), f.seed, f.greedy ? " (greedy)" : "");
  return out;
}

std::string format_stats_json(const GenerationStats& s, const RunFacts& f, const std::string& text) {
  return fmt::format(
      "{{\"model\":{},\"text\":{},\"stop\":\"{}\",\"seed\":{},\"greedy\":{},\"threads\":{},\"load_ms\":{:.3f},"
      "\"prompt_tokens\":{},\"prompt_reused_tokens\":{},\"prompt_ms\":{:.3f},\"prompt_tps\":{:.3f},"
      "\"ttft_ms\":{:.3f},\"generated_tokens\":{},\"generation_ms\":{:.3f},\"generation_tps\":{:.3f},"
      "\"ms_per_token\":{:.3f},\"context_used\":{},\"n_ctx\":{},\"shifted_tokens\":{}}}",
      json::quote(f.model_path), json::quote(text), stop_reason_name(s.stop), f.seed, f.greedy ? "true" : "false",
      f.n_threads, f.load_ms, s.prompt_tokens, s.reused_tokens, s.prompt_ms, s.prompt_tps(), s.ttft_ms,
      s.generated_tokens, s.generation_ms, s.generation_tps(), s.ms_per_token(), s.context_used, s.n_ctx,
      s.shifted_tokens);
}

}  // namespace ember
