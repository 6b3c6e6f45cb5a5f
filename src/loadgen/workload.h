// What a benchmark sends: synthetic prompts of seeded random words, or the lines of a
// prompts file, each turned into an OpenAI request body that streams.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ember::loadgen {

struct WorkItem {
  nlohmann::json input;  // a prompt string, or a messages array
  int max_tokens = 0;
  int approx_prompt_tokens = 0;  // words in the input: the estimate when a server sends no usage
  bool stream = true;            // false: one whole JSON answer
  std::string session;           // sent as X-Session-ID (load balancers' affinity key) when not empty
};

struct SyntheticOptions {
  int num_prompts = 0;
  int input_len = 0;  // words per prompt (~ tokens, see word_list.h)
  int output_len = 0;
  double range_ratio = 0;  // lengths uniform in [len * (1 - r), len * (1 + r)]
  uint64_t seed = 0;
};

// Throws Error(InvalidArgument) for lengths below 1 or a range ratio outside [0, 1).
std::vector<WorkItem> synthetic_workload(const SyntheticOptions& opts);

// One JSON object per line with "prompt" (a string) or "messages" (an array) and optional
// "max_tokens" (else `default_max_tokens`), "stream" (default true) and "session" (a
// string, sent as the X-Session-ID header); blank lines are skipped. `num_prompts` > 0 takes
// that many, repeating from the top when the file has fewer. A bad line is
// Error(InvalidArgument) naming FILE:LINE.
std::vector<WorkItem> read_prompts_file(const std::string& path, int default_max_tokens, int num_prompts);

enum class Endpoint { Completions, Chat };
// "/v1/completions" or "/v1/chat/completions"; anything else is Error(InvalidArgument).
Endpoint parse_endpoint(const std::string& path);

// The body: the input as `prompt` (completions) or `messages` (chat: a prompt becomes one
// user message; messages on /v1/completions are Error(InvalidArgument)), streaming with a
// usage chunk unless the item says otherwise, greedy, exactly max_tokens tokens (ignore_eos). `model` is left out when empty.
nlohmann::json request_body(const WorkItem& item, Endpoint endpoint, const std::string& model);

}  // namespace ember::loadgen
