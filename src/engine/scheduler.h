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
// It is ember's one generation loop: `run` and `chat` (a scheduler with one slot, session.h),
// `batch` and `serve` all generate through it. When a sequence ends is decided on the
// sequence (sequence.h: stop tokens, stop strings, max_tokens, a full context); a sequence
// that asks for it shifts its context instead (old tokens dropped, as --context-shift), and
// one with a cache_key leaves its KV cache parked for the next request of its conversation.
//
// Speculative drafting per sequence (SequenceRequest::draft): a decoding sequence whose
// n-gram lookup (ngram_draft.h) proposes k tokens contributes 1 + k rows to the step, its
// last token and the drafts, verified by speculative.h's exact rule (verify_draft) and
// rolled back past the first rejection. Drafts take only what the step's plain decodes
// leave of the token budget and the pool (they never preempt anyone), as many as the
// sequence's acceptance so far makes worth their rows, and at most kMaxVerifyRows - 1 per
// sequence. The logits stay bitwise those of single steps, so a greedy sequence gives
// exactly its tokens without drafting. A seeded sampled one draws from the same
// distribution as plain sampling but consumes its random stream differently: reproducible
// for the same requests and settings, not the same tokens as without drafts.
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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/model.h"
#include "sampling/params.h"
#include "sampling/sampler_chain.h"

namespace ember {

class BatchDraft;
class Sequence;
class Tokenizer;
namespace grammar { class TokenGrammar; }

// Prompt-lookup drafting for one sequence: propose up to `max` tokens that followed the last
// n tokens (n <= ngram) earlier in its own tokens. ngram 0: no drafting. Drafts cost rows of
// the shared batch, so by default a sequence drafts only as far as its own drafts have been
// accepted (sequence.h's DraftGate), and then at least `min`; fixed: always up to max.
// model: draft with the scheduler's draft model instead (SchedulerOptions::draft; ngram 0).
struct SequenceDrafting {
  int ngram = 0;
  int max = 8;
  bool fixed = false;
  bool model = false;
  int min = 1;
  bool enabled() const { return ngram > 0 || model; }
};

struct SequenceRequest {
  std::vector<int32_t> prompt;       // at least one token
  SamplingParams sampling;           // its own seed, penalties, temperature ...
  // Instead of a chain built from `sampling`: the caller's, whose random stream goes on from
  // one request to the next (chat turns). Not owned; it must outlive the sequence.
  SamplerChain* sampler = nullptr;
  int max_tokens = -1;               // generated tokens at most; < 0: until a stop token or the context ends
  std::vector<int32_t> stop_tokens;  // end generation (not emitted): the tokenizer's end-of-generation ids
  std::vector<int32_t> banned_tokens;     // never sampled (--ignore-eos bans the end-of-generation ids)
  std::vector<std::string> stop_strings;  // end generation, not included (needs SchedulerOptions::tokenizer)
  bool render_special = false;       // control tokens' text is part of the generated text
  int top_logprobs = -1;             // >= 0: report each token's log-probability and this many likeliest
  SequenceDrafting draft;            // speculative drafting (off by default)
  // A full context drops old tokens (after the context's n_keep) and goes on, instead of
  // ending the sequence (--context-shift: a context with ContextPolicy::Shift sets it for all).
  bool context_shift = false;
  // max_tokens may exceed what the context holds: the sequence then ends when the context is
  // full (run, chat) instead of being refused when submitted (batch, serve).
  bool may_fill_context = false;
  // Keep the KV cache under this key when the sequence ends (0: give it back), and with
  // resume start from the cache parked under it: its longest common prefix with the prompt
  // is not decoded again (a chat's earlier turns).
  uint64_t cache_key = 0;
  bool resume = false;
  // Constrained decoding: every generated token keeps the output in this grammar's
  // language, and the stop tokens come only where it may end (grammar/token_matcher.h).
  std::shared_ptr<const grammar::TokenGrammar> grammar;
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
  bool context_shift = false;  // every request shifts its context (the context's ContextPolicy::Shift)
};
// Throws what Scheduler::submit throws for a request that cannot run.
void check_request(const SequenceRequest& request, const SchedulerLimits& limits);
// Throws Error(ContextFull) naming both counts when a prompt of n_tokens exceeds n_ctx.
void check_prompt_fits(size_t n_tokens, int n_ctx);
// `token`'s log-probability in a logits row and the n_top likeliest (ties: lower id first).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int n_top);

// Stop: a stop token or stop string (or a grammar's complete output); Length: max_tokens;
// ContextFull: the context holds no more (or the KV pool, for a sequence alone); Cancelled:
// cancel(); GrammarDeadEnd: the grammar allows no token of the vocabulary from here.
enum class FinishReason { Stop, Length, ContextFull, Cancelled, GrammarDeadEnd };
// "stop", "length" (Length, ContextFull), "cancelled", "grammar"
const char* finish_reason_name(FinishReason r);

// How a sequence ended, with what happened to its KV cache.
struct SequenceEnd {
  FinishReason reason = FinishReason::Stop;
  int reused_tokens = 0;   // of its prompt, found in the parked cache it resumed
  int shifted_tokens = 0;  // dropped by context shifts
  int cached_tokens = 0;   // held in its KV cache at the end
  int prompt_cached = 0;   // of its prompt, found in the prefix cache or its parked cache when first seated
};

struct SchedulerOptions {
  int max_sequences = 0;  // running at once (-np); 0 = the context's n_seq
  int batch_tokens = 0;   // tokens per step (--batch-tokens); 0 = the context's n_batch
  // A draft model's context (draft_setup.h's load_draft_context: the target's sequences,
  // vocabulary compatible) for requests with SequenceDrafting::model; not owned, it must
  // outlive the scheduler, and only one scheduler may use it at a time.
  Context* draft = nullptr;
  // Text: every sequence's tokens are detokenized and cut at its stop strings (Events::on_text).
  const Tokenizer* tokenizer = nullptr;
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t batch_tokens = 0;       // tokens decoded in all steps (prompt chunks + generated)
  int64_t prompt_tokens = 0;      // of submitted prompts
  int64_t cached_tokens = 0;      // of them (and of recomputations) found in the prefix cache
  int64_t prefix_lookup_tokens = 0; // tokens looked up in the prefix cache (the cached_tokens' whole)
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t drafted_tokens = 0;     // proposed by sequences' drafts and verified
  int64_t accepted_tokens = 0;    // of them, accepted (emitted without a step of their own)
  int64_t draft_model_tokens = 0; // rows the draft model decoded (catch-up and drafts)
};

class Scheduler {
 public:
  // on_token(id, token) for every generated token but stop tokens; on_logprobs just before
  // it, for sequences that asked for them; on_text just after it, with the text that token
  // made final (maybe none), and once more before on_finish with what was held back;
  // on_finish once per sequence, after which its id is forgotten.
  struct Events {
    std::function<void(int id, int32_t token)> on_token;
    std::function<void(int id, const SequenceEnd& end)> on_finish;
    std::function<void(int id, const TokenLogprobs& logprobs)> on_logprobs;
    std::function<void(int id, std::string_view text)> on_text;
  };
  Scheduler(Context& ctx, const SchedulerOptions& options, Events events);
  ~Scheduler();

  // Queues a sequence and returns its id. Throws what check_request throws.
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

  // The tokens of the cache parked under `key` (SequenceRequest::cache_key), empty if none;
  // drop_parked gives it back.
  std::span<const int32_t> parked_tokens(uint64_t key) const;
  void drop_parked(uint64_t key);

 private:
  struct Chunk {
    Sequence* seq;
    int n;            // tokens of this step, from seq->n_computed on
    int drafted = 0;  // then this many of seq->proposal's tokens (a decode only)
  };
  struct ParkedCache {
    uint64_t key;
    int slot;
    std::vector<int32_t> tokens;  // what its KV cache holds
  };
  void retire_cancelled();
  void admit();
  void seat(Sequence& s);
  std::vector<Chunk> plan_batch();
  bool room_for_decode(size_t i, bool plan_empty);
  void shift_if_full(Sequence& s);
  void plan_prompt_chunks(std::vector<Chunk>& plan, int budget);
  void plan_drafts(std::vector<Chunk>& decodes, int& budget);
  int draft_room(const Sequence& s, int budget) const;
  int fit_drafts(const Sequence& s, int k);
  void draft_with_model(std::vector<Chunk>& plan);
  void clear_slot(int slot);
  void release(Sequence& s);
  void add_rows(const Chunk& c);
  void preempt(Sequence& s);
  void finish(Sequence& s, FinishReason reason);
  void take_outputs(const std::vector<Chunk>& plan, std::span<const float> logits);
  std::span<const float> masked(const Sequence& s, std::span<const float> rows);
  std::span<const float> constrained(Sequence& s, std::span<const float> row);
  void sample(Sequence& s, std::span<const float> logits);
  bool emit(Sequence& s, int32_t token, std::span<const float> logits);
  void verify(Sequence& s, int k, std::span<const float> rows);
  void dead_end(Sequence& s);
  void roll_back_to(Sequence& s, int n_tokens);
  bool cancelled(int id) const;
  // Parked caches (scheduler_parking.cpp).
  std::vector<ParkedCache>::iterator find_parked(uint64_t key);
  void park(Sequence& s);
  bool take_parked(Sequence& s);
  void release_parked(const ParkedCache& p);
  bool evict_parked(uint64_t spare_key);  // the oldest not under spare_key; false: none

  Context& ctx_;
  SchedulerOptions opts_;
  Events events_;
  int next_id_ = 0;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order: preemption takes the back
  std::vector<ParkedCache> parked_;                  // oldest first
  std::vector<int> free_slots_;
  std::vector<int> cancelled_;
  std::vector<int> need_;                            // per slot: tokens planned this step
  std::vector<float> q_dense_;                       // verify_draft's scratch
  std::vector<float> masked_;                        // logits rows with banned tokens masked
  std::vector<float> constrained_;                   // a logits row with the grammar's mask
  int max_rows_ = 1;                                 // rows of one sequence in a step, drafts included
  Batch batch_;
  std::unique_ptr<BatchDraft> draft_;                // the draft model's side (null: none)
  SchedulerStats stats_;
  SchedulerLimits limits_;
};

}  // namespace ember
