// Output of `ember bench`: llama-bench's markdown table, json (an array of objects with
// llama-bench's field names) and csv, plus what llama-bench does not print: TTFT of the
// prompt test, bytes one decode step reads, the measured memory bandwidth and the decode
// speed as a percentage of that roofline.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/bench.h"

namespace ember::eval {

struct BenchModelInfo {
  std::string filename;
  std::string type;        // llama-bench's model_type: "llama 1B Q4_0"
  uint64_t size = 0;       // bytes of tensor data
  uint64_t n_params = 0;
};

// A speculative decoding row (eval/bench_speculative.h), totals over its timed runs.
struct BenchSpeculative {
  std::string source;       // "n-gram 3", "draft model small.gguf"
  double plain_ts = 0;      // mean t/s of the plain greedy row (same prompt, same n)
  int drafted = 0, accepted = 0;
  int target_passes = 0;    // target decode passes after the prompt
  int generated = 0;
  bool same_text = true;    // every run produced the plain run's tokens
  double acceptance() const { return drafted ? double(accepted) / drafted : 0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0; }
};

struct BenchRow {
  BenchResult result;
  std::string backend = "CPU";  // llama-bench's "backends" field: CPU, CUDA
  // What result.mem_bw_runs measured, as the notes name it.
  std::string bandwidth_name = "memory bandwidth";
  // The names of the read patterns the reference took the best of (result.mem_bw_patterns
  // index them); empty when the probe has one way to read.
  std::vector<std::string> bandwidth_patterns;
  int n_threads = 0;
  int n_batch = 0;
  int n_ubatch = 0;
  std::string type_k, type_v;
  uint64_t decode_bytes = 0;  // tg tests: bytes read per decoded token (at the mean depth)
  double mem_bw() const;      // median of result.mem_bw_runs, 0 when not measured
  std::optional<BenchSpeculative> speculative;  // set on a speculative decoding row
  double speedup() const;     // speculative rows: mean t/s over the plain greedy row's; else 0
  double ttft_ms() const;     // pp tests: mean time to the first logits
  double roofline_ts() const; // mem_bw() / decode_bytes
  std::vector<double> roofline_pct_runs() const;  // each run's t/s against its own roofline, in %
  double roofline_pct() const;  // their median, 0 when not measured
  // How the reference was read, for the notes and the json: "best of 5 read patterns per run;
  // set by: decode's chunks, 2 streams each (3 runs), 2 streams per thread (2 runs)".
  std::string bandwidth_method() const;
};

// "llama 1B Q4_0": architecture, a size label from the parameter count and the file type
// (general.file_type named as llama.cpp names it, or the dominant tensor type).
std::string model_type_label(const std::string& arch, uint64_t n_params, const std::string& ftype_name);
// llama.cpp's name for a general.file_type id ("Q4_K - Medium"); empty when unknown.
std::string llama_ftype_name(uint32_t ftype);

std::string format_markdown(const BenchModelInfo& model, const std::vector<BenchRow>& rows, bool with_header);
// Lines printed after the markdown table: TTFT, bytes per decoded token, roofline.
std::string format_notes(const std::vector<BenchRow>& rows);
std::string format_json(const BenchModelInfo& model, const std::vector<BenchRow>& rows);
std::string format_csv(const BenchModelInfo& model, const std::vector<BenchRow>& rows, bool with_header);

}  // namespace ember::eval
