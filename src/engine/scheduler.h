// The iteration-level scheduler (continuous batching) over one Context of n_seq sequence
// slots and its KV block pool. Each step() builds one batch: the next token of every
// running sequence plus chunks of the prompts still being computed, oldest sequence first,
// under a token budget (chunked prefill: a long prompt never stalls running decodes).
// Finished sequences leave and waiting ones enter at the next step. When the pool has no
// block for a sequence's tokens, the most recently admitted sequence is preempted: its
// blocks go back (its full blocks stay in the prefix cache) and it waits at the front of
// the queue, to be recomputed from its tokens; its sampler keeps its state, and since a
// token's logits do not depend on the batch around it, its output is unchanged.
// A new sequence first takes the prefix cache's blocks for the start of its tokens.
//
// Speculative drafting per sequence (SequenceRequest::draft): a decoding sequence whose
// n-gram lookup (ngram_draft.h) proposes k tokens contributes 1 + k rows to the step, its
// last token and the drafts, verified by speculative.h's exact rule (verify_draft) and
// rolled back past the first rejection. Drafts take only what the step's plain decodes
// leave of the token budget and the pool (they never preempt anyone), as many as the
// sequence's acceptance so far makes worth their rows, and at most
// max_verify_rows - 1 per sequence, so the logits stay bitwise those of single steps: a
// greedy sequence gives exactly its tokens without drafting. A seeded sampled one draws
// from the same distribution as plain sampling but consumes its random stream differently:
// reproducible for the same requests and settings, not the same tokens as without drafts.
//
// With a draft model (SchedulerOptions::draft, SequenceDrafting::model) the proposals come
// from draft_batch.h instead of the lookup: after planning, one draft run catches every
// drafting sequence's draft cache up (prompt chunks mirrored, accepted tokens, in its own
// budget of batch_tokens rows) and drafts for all of them together, one draft decode() per
// draft position. The same rule verifies them; preemption, cancellation and finishing free
// the sequence's draft blocks too. When the gate drafts nothing, the draft's first token is
// the guess the gate checks (it costs a draft row, not a target row).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "model/model.h"
#include "sampling/params.h"
#include "sampling/sampler_chain.h"

namespace ember {

class BatchDraft;

// Prompt-lookup drafting for one sequence: propose up to `max` tokens that followed the last
// n tokens (n <= ngram) earlier in its own tokens. ngram 0: no drafting. Drafts cost rows of
// the shared batch, so by default a sequence drafts only as far as its own drafts have been
// accepted (scheduler.cpp's DraftGate); fixed: always up to max.
// model: draft with the scheduler's draft model instead (SchedulerOptions::draft; ngram 0).
struct SequenceDrafting {
  int ngram = 0;
  int max = 8;
  bool fixed = false;
  bool model = false;
  bool enabled() const { return ngram > 0 || model; }
};

struct SequenceRequest {
  std::vector<int32_t> prompt;       // at least one token
  SamplingParams sampling;           // its own seed, penalties, temperature ...
  int max_tokens = -1;               // generated tokens at most; < 0: until a stop token or the context ends
  std::vector<int32_t> stop_tokens;  // end generation (not emitted): the tokenizer's end-of-generation ids
  int top_logprobs = -1;             // >= 0: report each token's log-probability and this many likeliest
  SequenceDrafting draft;            // speculative drafting (off by default)
};

// A generated token's log-probability under the model (its logits before sampling), with
// the likeliest tokens of that step, most likely first.
struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

// What a request must satisfy to ever run; fixed when the scheduler is built, so other
// threads may check requests against a copy.
struct SchedulerLimits {
  int n_ctx = 0;
  int pool_blocks = 0;  // of the global layers; 0: no pool limit
  int block_size = 1;
  bool draft_model = false;  // requests may draft with a draft model
};
// Throws what Scheduler::submit throws for a request that cannot run.
void check_request(const SequenceRequest& request, const SchedulerLimits& limits);
// `token`'s log-probability in a logits row and the n_top likeliest (ties: lower id first).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int n_top);

enum class FinishReason { Stop, Length, Cancelled };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled"

struct SchedulerOptions {
  int max_sequences = 0;  // running at once (-np); 0 = the context's n_seq
  int batch_tokens = 0;   // tokens per step (--batch-tokens); 0 = the context's n_batch
  // A draft model's context (draft_setup.h's load_draft_context: the target's sequences,
  // vocabulary compatible) for requests with SequenceDrafting::model; not owned, it must
  // outlive the scheduler, and only one scheduler may use it at a time.
  Context* draft = nullptr;
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t batch_tokens = 0;       // tokens decoded in all steps (prompt chunks + generated)
  int64_t prompt_tokens = 0;      // of submitted prompts
  int64_t cached_tokens = 0;      // of them (and of recomputations) found in the prefix cache
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t drafted_tokens = 0;     // proposed by sequences' drafts and verified
  int64_t accepted_tokens = 0;    // of them, accepted (emitted without a step of their own)
  int64_t draft_model_tokens = 0; // rows the draft model decoded (catch-up and drafts)
};

class Scheduler {
 public:
  // on_token(id, token) for every generated token but stop tokens; on_finish(id, reason)
  // once per sequence, after which its id is forgotten; on_logprobs just before on_token,
  // for sequences that asked for them.
  struct Events {
    std::function<void(int id, int32_t token)> on_token;
    std::function<void(int id, FinishReason reason)> on_finish;
    std::function<void(int id, const TokenLogprobs& logprobs)> on_logprobs;
  };
  Scheduler(Context& ctx, const SchedulerOptions& options, Events events);
  ~Scheduler();

  // Queues a sequence and returns its id. Throws InvalidArgument for an empty prompt,
  // ContextFull when prompt (+ max_tokens) exceeds n_ctx, OutOfMemory when it could not fit
  // the block pool even alone (both with the counts).
  int submit(SequenceRequest request);
  // Ends a sequence at the next step (its blocks go back then); unknown ids are ignored.
  void cancel(int id);

  // One iteration: admit, build the batch, decode, sample, retire. Returns false when there
  // was nothing to do.
  bool step();
  void run() { while (step()) {} }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerLimits& limits() const { return limits_; }

 private:
  struct Sequence;
  struct Chunk {
    Sequence* seq;
    int n;            // tokens of this step, from seq->n_computed on
    int drafted = 0;  // then this many of seq->proposal's tokens (a decode only)
  };
  void retire_cancelled();
  void admit();
  std::vector<Chunk> plan_batch();
  void plan_drafts(std::vector<Chunk>& decodes, int& budget);
  int draft_room(const Sequence& s, int budget) const;
  int fit_drafts(const Sequence& s, int k);
  void draft_with_model(std::vector<Chunk>& plan);
  void release(Sequence& s);
  void add_rows(const Chunk& c);
  void preempt(Sequence& s);
  void finish(Sequence& s, FinishReason reason);
  void sample(Sequence& s, std::span<const float> logits);
  bool emit(Sequence& s, int32_t token, std::span<const float> logits);
  void verify(Sequence& s, int k, std::span<const float> rows);
  void roll_back_to(Sequence& s, int n_tokens);
  bool cancelled(int id) const;

  Context& ctx_;
  SchedulerOptions opts_;
  Events events_;
  int next_id_ = 0;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order: preemption takes the back
  std::vector<int> free_slots_;
  std::vector<int> cancelled_;
  std::vector<int> need_;                            // per slot: tokens planned this step
  std::vector<float> q_dense_;                       // verify_draft's scratch
  int max_rows_ = 1;                                 // rows of one sequence in a step, drafts included
  Batch batch_;
  std::unique_ptr<BatchDraft> draft_;                // the draft model's side (null: none)
  SchedulerStats stats_;
  SchedulerLimits limits_;
};

}  // namespace ember
