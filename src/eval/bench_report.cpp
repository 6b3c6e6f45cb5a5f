#include "eval/bench_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "eval/bench.h"
#include "util/json.h"

namespace ember::eval {

double BenchRow::ttft_ms() const { return result.test.n_prompt > 0 ? result.avg_ns() / 1e6 : 0; }

double BenchRow::mem_bw() const { return median(result.mem_bw_runs); }
double BenchRow::roofline_ts() const {
  const double bw = mem_bw();
  return decode_bytes > 0 && bw > 0 ? bw / double(decode_bytes) : 0;
}
double BenchRow::speedup() const {
  return speculative && speculative->plain_ts > 0 ? result.avg_ts() / speculative->plain_ts : 0;
}

std::vector<double> BenchRow::roofline_pct_runs() const {
  const std::vector<double> ts = result.samples_ts();
  std::vector<double> pct;
  if (decode_bytes == 0 || result.test.n_gen == 0 || result.test.n_prompt > 0 ||
      result.mem_bw_runs.size() != ts.size())
    return pct;
  for (size_t i = 0; i < ts.size(); ++i) pct.push_back(100.0 * ts[i] * double(decode_bytes) / result.mem_bw_runs[i]);
  return pct;
}

double BenchRow::roofline_pct() const { return median(roofline_pct_runs()); }

std::string BenchRow::bandwidth_method() const {
  if (bandwidth_patterns.size() <= 1) return bandwidth_name;
  std::vector<int> wins(bandwidth_patterns.size(), 0);
  for (int p : result.mem_bw_patterns)
    if (p >= 0 && static_cast<size_t>(p) < wins.size()) ++wins[static_cast<size_t>(p)];
  std::vector<std::string> won;
  for (size_t i = 0; i < wins.size(); ++i)
    if (wins[i] > 0) won.push_back(fmt::format("{} ({} run{})", bandwidth_patterns[i], wins[i], wins[i] > 1 ? "s" : ""));
  return fmt::format("best of {} read patterns per run; set by: {}", bandwidth_patterns.size(),
                     won.empty() ? std::string("none") : fmt::format("{}", fmt::join(won, ", ")));
}

std::string llama_ftype_name(uint32_t ftype) {
  switch (ftype) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 32: return "BF16";
    default: return "";
  }
}

std::string model_type_label(const std::string& arch, uint64_t n_params, const std::string& ftype_name) {
  std::string size;
  if (n_params >= 1'000'000'000) size = fmt::format("{}B", (n_params + 500'000'000) / 1'000'000'000);
  else if (n_params >= 1'000'000) size = fmt::format("{}M", (n_params + 500'000) / 1'000'000);
  else size = fmt::format("{}K", (n_params + 500) / 1000);
  return fmt::format("{} {} {}", arch, size, ftype_name);
}

namespace {

std::string human_size(uint64_t bytes) {
  return bytes < (1ull << 30) ? fmt::format("{:.2f} MiB", double(bytes) / (1 << 20))
                              : fmt::format("{:.2f} GiB", double(bytes) / (1 << 30));
}

std::string human_params(uint64_t n) {
  return n < 1'000'000'000 ? fmt::format("{:.2f} M", double(n) / 1e6) : fmt::format("{:.2f} B", double(n) / 1e9);
}

std::string json_numbers(const std::vector<double>& v, bool integers) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += integers ? fmt::format("{}", uint64_t(v[i])) : fmt::format("{:.6f}", v[i]);
  }
  return s + "]";
}

}  // namespace

std::string format_markdown(const BenchModelInfo& m, const std::vector<BenchRow>& rows, bool with_header) {
  std::string out;
  auto it = std::back_inserter(out);
  if (with_header) {
    fmt::format_to(it, "| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |\n", "model", "size", "params",
                   "backend", "threads", "test", "t/s");
    // llama-bench's rule: left-aligned columns all dashes, right-aligned ones end in ':'.
    fmt::format_to(it, "| {:-<30} | {:->9}: | {:->9}: | {:-<10} | {:->6}: | {:->14}: | {:->19}: |\n", "", "", "", "", "",
                   "", "");
  }
  for (const BenchRow& r : rows) {
    fmt::format_to(it, "| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |\n", m.type, human_size(m.size),
                   human_params(m.n_params), r.backend, r.n_threads, r.result.test.name(),
                   fmt::format("{:.2f} ± {:.2f}", r.result.avg_ts(), r.result.stddev_ts()));
  }
  return out;
}

std::string format_notes(const std::vector<BenchRow>& rows) {
  std::string out;
  auto it = std::back_inserter(out);
  for (const BenchRow& r : rows) {
    const BenchTest& t = r.result.test;
    if (t.n_prompt > 0 && t.n_gen == 0) {
      fmt::format_to(it, "{}: TTFT {:.1f} ± {:.1f} ms (prefill of {} tokens to the first logits)\n", t.name(),
                     r.ttft_ms(), r.result.stddev_ns() / 1e6, t.n_prompt);
    } else if (r.speculative) {
      const BenchSpeculative& s = *r.speculative;
      fmt::format_to(it,
                     "{}: {:.2f}x the plain greedy run's {:.2f} t/s{}; drafted {}, accepted {} ({:.1f}%), "
                     "{:.2f} tokens per target pass\n",
                     t.name(), r.speedup(), s.plain_ts, s.same_text ? " (same text)" : " (TEXT DIFFERS)", s.drafted,
                     s.accepted, 100.0 * s.acceptance(), s.tokens_per_pass());
    } else if (t.n_gen > 0 && t.n_prompt == 0 && r.decode_bytes > 0) {
      fmt::format_to(it, "{}: {:.1f} MiB read per decoded token", t.name(), double(r.decode_bytes) / (1 << 20));
      if (r.mem_bw() > 0) {
        fmt::format_to(it,
                       "; {} {:.1f} GB/s -> roofline {:.1f} t/s; decode at {:.1f}% of it "
                       "(median over the runs, each against the bandwidth read between its tokens: {:.1f}%)",
                       r.bandwidth_name, r.mem_bw() / 1e9, r.roofline_ts(), r.roofline_pct(), fmt::join(r.roofline_pct_runs(), "%, "));
        if (r.bandwidth_patterns.size() > 1) fmt::format_to(it, "\n  bandwidth probe: {}", r.bandwidth_method());
      }
      out += "\n";
    }
  }
  return out;
}

std::string format_json(const BenchModelInfo& m, const std::vector<BenchRow>& rows) {
  std::string out = "[\n";
  auto it = std::back_inserter(out);
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    const BenchTest& t = r.result.test;
    out += "  {\n";
    fmt::format_to(it, "    \"model_filename\": {},\n    \"model_type\": {},\n", json::quote(m.filename), json::quote(m.type));
    fmt::format_to(it, "    \"model_size\": {},\n    \"model_n_params\": {},\n", m.size, m.n_params);
    fmt::format_to(it, "    \"backends\": {},\n    \"n_batch\": {},\n    \"n_ubatch\": {},\n    \"n_threads\": {},\n",
                   json::quote(r.backend), r.n_batch, r.n_ubatch, r.n_threads);
    fmt::format_to(it, "    \"type_k\": {},\n    \"type_v\": {},\n", json::quote(r.type_k), json::quote(r.type_v));
    fmt::format_to(it, "    \"n_prompt\": {},\n    \"n_gen\": {},\n    \"n_depth\": {},\n", t.n_prompt, t.n_gen, t.n_depth);
    fmt::format_to(it, "    \"test\": {},\n", json::quote(t.name()));
    fmt::format_to(it, "    \"avg_ns\": {},\n    \"stddev_ns\": {},\n", uint64_t(r.result.avg_ns()), uint64_t(r.result.stddev_ns()));
    fmt::format_to(it, "    \"avg_ts\": {:.6f},\n    \"stddev_ts\": {:.6f},\n", r.result.avg_ts(), r.result.stddev_ts());
    fmt::format_to(it, "    \"samples_ns\": {},\n    \"samples_ts\": {},\n", json_numbers(r.result.samples_ns, true),
                   json_numbers(r.result.samples_ts(), false));
    fmt::format_to(it, "    \"ttft_ms\": {:.3f},\n    \"decode_bytes_per_token\": {},\n", r.ttft_ms(), r.decode_bytes);
    fmt::format_to(it, "    \"mem_bw_gbs\": {:.3f},\n    \"roofline_ts\": {:.3f},\n    \"roofline_pct\": {:.2f}",
                   r.mem_bw() / 1e9, r.roofline_ts(), r.roofline_pct());
    if (r.mem_bw() > 0) fmt::format_to(it, ",\n    \"mem_bw_method\": {}", json::quote(r.bandwidth_method()));
    if (r.speculative) {
      const BenchSpeculative& s = *r.speculative;
      fmt::format_to(it,
                     ",\n    \"speculative\": {{\"source\": {}, \"plain_ts\": {:.6f}, \"speedup\": {:.4f}, "
                     "\"drafted\": {}, \"accepted\": {}, \"acceptance_rate\": {:.4f}, \"target_passes\": {}, "
                     "\"tokens_per_pass\": {:.4f}, \"same_text\": {}}}",
                     json::quote(s.source), s.plain_ts, r.speedup(), s.drafted, s.accepted, s.acceptance(),
                     s.target_passes, s.tokens_per_pass(), s.same_text ? "true" : "false");
    }
    out += "\n";
    out += i + 1 < rows.size() ? "  },\n" : "  }\n";
  }
  return out + "]\n";
}

std::string format_csv(const BenchModelInfo& m, const std::vector<BenchRow>& rows, bool with_header) {
  std::string out;
  auto it = std::back_inserter(out);
  if (with_header) {
    out += "model_filename,model_type,model_size,model_n_params,backends,n_batch,n_ubatch,n_threads,type_k,type_v,"
           "n_prompt,n_gen,n_depth,test,avg_ns,stddev_ns,avg_ts,stddev_ts,ttft_ms,decode_bytes_per_token,mem_bw_gbs,"
           "roofline_pct,spec_source,spec_speedup,spec_acceptance_rate,spec_tokens_per_pass,spec_same_text\n";
  }
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const BenchRow& r : rows) {
    const BenchTest& t = r.result.test;
    fmt::format_to(it, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.3f},{},{:.3f},{:.2f},",
                   quoted(m.filename), quoted(m.type), m.size, m.n_params, r.backend, r.n_batch, r.n_ubatch, r.n_threads, r.type_k,
                   r.type_v, t.n_prompt, t.n_gen, t.n_depth, quoted(t.name()), uint64_t(r.result.avg_ns()),
                   uint64_t(r.result.stddev_ns()), r.result.avg_ts(), r.result.stddev_ts(), r.ttft_ms(), r.decode_bytes,
                   r.mem_bw() / 1e9, r.roofline_pct());
    if (r.speculative) {
      const BenchSpeculative& s = *r.speculative;
      fmt::format_to(it, "{},{:.4f},{:.4f},{:.4f},{}\n", quoted(s.source), r.speedup(), s.acceptance(),
                     s.tokens_per_pass(), s.same_text ? 1 : 0);
    } else {
      out += ",,,,\n";
    }
  }
  return out;
}

}  // namespace ember::eval
