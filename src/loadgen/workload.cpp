#include "loadgen/workload.h"

#include <algorithm>
#include <sstream>

#include "loadgen/word_list.h"
#include "sampling/rng.h"
#include "util/error.h"
#include "util/mmap.h"

namespace ember::loadgen {
namespace {

// Uniform in [lo, hi] (the modulo bias is far below anything a benchmark sees).
int uniform_int(Rng& rng, int lo, int hi) { return lo + static_cast<int>(rng.next_u64() % uint64_t(hi - lo + 1)); }

// vLLM's random dataset range: [int(len * (1 - r)), int(len * (1 + r))], at least 1.
int draw_length(Rng& rng, int len, double ratio) {
  const int lo = std::max(1, static_cast<int>(len * (1 - ratio)));
  return uniform_int(rng, lo, std::max(lo, static_cast<int>(len * (1 + ratio))));
}

std::string random_words(Rng& rng, int count) {
  const auto words = prompt_words();
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i) out += ' ';
    out += words[rng.next_u64() % words.size()];
  }
  return out;
}

int count_words(const std::string& text) {
  std::istringstream in(text);
  int n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

WorkItem parse_prompt_line(const std::string& line, int default_max_tokens) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) fail(ErrorKind::InvalidArgument, "not a JSON object");
  WorkItem item;
  item.max_tokens = default_max_tokens;
  if (const auto p = j.find("prompt"); p != j.end() && p->is_string()) {
    item.input = *p;
    item.approx_prompt_tokens = count_words(p->get<std::string>());
  } else if (const auto m = j.find("messages"); m != j.end() && m->is_array() && !m->empty()) {
    item.input = *m;
    for (const nlohmann::json& msg : *m)
      if (msg.is_object() && msg.contains("content") && msg["content"].is_string())
        item.approx_prompt_tokens += count_words(msg["content"].get<std::string>());
  } else {
    fail(ErrorKind::InvalidArgument, "needs \"prompt\" (a string) or \"messages\" (a non-empty array)");
  }
  if (const auto s = j.find("stream"); s != j.end()) {
    if (!s->is_boolean()) fail(ErrorKind::InvalidArgument, "\"stream\" must be true or false");
    item.stream = s->get<bool>();
  }
  if (const auto s = j.find("session"); s != j.end()) {
    if (!s->is_string()) fail(ErrorKind::InvalidArgument, "\"session\" must be a string");
    item.session = s->get<std::string>();
  }
  if (const auto t = j.find("max_tokens"); t != j.end()) {
    if (!t->is_number_integer() || t->get<int>() < 1) fail(ErrorKind::InvalidArgument, "\"max_tokens\" must be an integer >= 1");
    item.max_tokens = t->get<int>();
  }
  return item;
}

}  // namespace

std::vector<WorkItem> synthetic_workload(const SyntheticOptions& opts) {
  if (opts.input_len < 1) fail(ErrorKind::InvalidArgument, "--input-len {} must be at least 1", opts.input_len);
  if (opts.output_len < 1) fail(ErrorKind::InvalidArgument, "--output-len {} must be at least 1", opts.output_len);
  if (!(opts.range_ratio >= 0 && opts.range_ratio < 1))
    fail(ErrorKind::InvalidArgument, "--range-ratio {} must be in [0, 1)", opts.range_ratio);
  Rng rng(opts.seed);
  std::vector<WorkItem> items(static_cast<size_t>(std::max(opts.num_prompts, 0)));
  for (WorkItem& item : items) {
    item.approx_prompt_tokens = draw_length(rng, opts.input_len, opts.range_ratio);
    item.max_tokens = draw_length(rng, opts.output_len, opts.range_ratio);
    item.input = random_words(rng, item.approx_prompt_tokens);
  }
  return items;
}

std::vector<WorkItem> read_prompts_file(const std::string& path, int default_max_tokens, int num_prompts) {
  std::istringstream in(read_text_file(path));
  std::vector<WorkItem> items;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      items.push_back(parse_prompt_line(line, default_max_tokens));
    } catch (const Error& e) {
      fail(ErrorKind::InvalidArgument, "{}:{}: {}", path, line_no, e.what());
    }
  }
  if (items.empty()) fail(ErrorKind::InvalidArgument, "{}: no prompts", path);
  for (size_t i = 0; num_prompts > 0 && items.size() < static_cast<size_t>(num_prompts); ++i) items.push_back(items[i]);
  if (num_prompts > 0) items.resize(static_cast<size_t>(num_prompts));
  return items;
}

Endpoint parse_endpoint(const std::string& path) {
  if (path == "/v1/completions") return Endpoint::Completions;
  if (path == "/v1/chat/completions") return Endpoint::Chat;
  fail(ErrorKind::InvalidArgument, "--endpoint {} must be /v1/completions or /v1/chat/completions", path);
}

nlohmann::json request_body(const WorkItem& item, Endpoint endpoint, const std::string& model) {
  nlohmann::json body = nlohmann::json::object();
  if (!model.empty()) body["model"] = model;
  if (endpoint == Endpoint::Chat) {
    body["messages"] = item.input.is_string()
                           ? nlohmann::json::array({{{"role", "user"}, {"content", item.input}}})
                           : item.input;
  } else {
    if (!item.input.is_string()) fail(ErrorKind::InvalidArgument, "\"messages\" prompts need --endpoint /v1/chat/completions");
    body["prompt"] = item.input;
  }
  body["max_tokens"] = item.max_tokens;
  body["stream"] = item.stream;
  if (item.stream) body["stream_options"] = {{"include_usage", true}};
  body["ignore_eos"] = true;
  body["temperature"] = 0;
  return body;
}

}  // namespace ember::loadgen
