// The KV cache: sequences over a paged block pool. Layers are grouped by attention span
// (global layers, and sliding-window layers of one window), each group with its own
// BlockPool (block_pool.h); a sequence holds, per group, a block table: logical block i
// (tokens [i * block_size, (i + 1) * block_size) of the sequence) -> physical block.
// Attention reads K/V through the table (KVView::blocks), so a sequence costs its tokens
// rounded up to one block, not n_ctx.
//
// Positions are contiguous from 0: the i-th token a sequence holds sits at position i in
// slot i of its table (a context shift renumbers the survivors so this stays true).
//
// Sliding-window groups give back the blocks that fell behind the window plus a rollback
// allowance (`rollback_tokens`), at commit(); rolling back further than that on such a
// group throws. Global groups roll back any number of tokens.
//
// Prefix cache (global-only models; a sliding-window group would need its own hits): after
// each step, commit() publishes the sequence's newly full blocks under a hash chained over
// their tokens; attach_prefix() gives a new sequence the longest run of published blocks
// that starts its prompt. Shared blocks are never written: a rollback or shift into one
// copies it first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "backend/kv_types.h"
#include "backend/kv_view.h"
#include "backend/ops.h"
#include "kv/block_pool.h"
#include "tensor/dtype.h"

namespace ember {

struct KVCacheConfig {
  int n_layer = 0;
  int n_seq = 1;
  int n_ctx = 0;               // tokens per sequence at most
  int n_ubatch = 512;          // tokens a step appends to one sequence at most
  int64_t k_row = 0;           // K elements per token per layer (n_head_kv * head_dim)
  int64_t v_row = 0;           // V elements per token per layer
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  std::vector<int> window;     // [n_layer] sliding window in tokens, 0 = global layer
  int block_size = 32;         // tokens per block (a multiple of attention's 32-key tile)
  // Blocks of the global group; 0 = enough for every sequence at n_ctx. Sliding-window
  // groups get enough for every sequence's window + rollback + one ubatch.
  int n_blocks = 0;
  int rollback_tokens = -1;    // sliding-window rollback allowance; -1 = n_ubatch
  bool prefix_cache = true;
};

// Block counts of one group, for plans, metrics and tests.
struct KVBlockStats {
  int window = 0;     // 0 = the global group
  int total = 0;
  int used = 0;       // owned by at least one sequence
  int cached = 0;     // unowned, kept for prefix hits
  int free = 0;       // unowned, empty
};

class KVCache {
 public:
  // Layer il's K/V rows live in backends[il]'s memory, which also copies and re-rotates them
  // (shift, rollback into shared blocks); one backend for all layers in the second form.
  // Throws InvalidArgument for bad types/rows.
  KVCache(const KVCacheConfig& cfg, std::vector<KVMemory*> backends);
  KVCache(const KVCacheConfig& cfg, KVMemory& backend);
  ~KVCache();

  const KVCacheConfig& config() const { return cfg_; }
  int block_size() const { return cfg_.block_size; }
  size_t total_bytes() const;           // every pool: K + V + slot positions and tokens
  size_t bytes_per_token() const;       // K + V bytes one token costs across all layers
  static size_t bytes_for(const KVCacheConfig& cfg);  // total_bytes() without allocating

  int n_tokens(int seq) const { return seqs_[seq].n_tokens; }
  int next_pos(int seq) const { return seqs_[seq].n_tokens; }

  // Blocks that appending n_new tokens to `seq` takes from the pools, in all, and whether
  // the pools have them (for `n_seq` sequences at once: n_new[s] each).
  bool fits(std::span<const int> n_new) const;
  int blocks_to_append(int seq, int n_new) const;
  std::vector<KVBlockStats> stats() const;
  KVBlockStats global_stats() const;    // the group of global layers (zeros when there is none)
  int blocks_held(int seq) const;       // all groups

  // Takes the slot for the next token of `seq` (at position `pos` == next_pos(seq)) in every
  // layer and returns its ordinal. The caller stores the rows before attention reads them.
  // Throws ContextFull past n_ctx, OutOfMemory when a pool has no block left.
  struct Slot { int64_t index; };   // token ordinal within the sequence
  Slot append(int seq, int32_t pos, int32_t token);

  // Row pointer (backend memory) of token ordinal `slot`'s K in layer `layer` of `seq`. For tests.
  void* k_row(int layer, int seq, Slot slot);

  // What attention of layer `layer` reads for `seq`.
  KVView view(int layer, int seq) const;
  // The view a backend's step reads (backend/kv_view.h): every layer's storage, the storage
  // row of step token t (of sequence seq[t], ordinal slots[t]) and every sequence's tables.
  // Valid until the cache next changes.
  const StepKV& step_view(std::span<const int32_t> seq, std::span<const int64_t> slots);

  // After a step that appended to `seq`: sliding-window groups give back blocks behind the
  // window, newly full blocks are published for prefix hits.
  void commit(int seq);
  // Gives an empty `seq` the published blocks that hold the start of `tokens` (whole blocks,
  // always leaving at least one token to compute) and returns how many tokens it now holds.
  int attach_prefix(int seq, std::span<const int32_t> tokens);

  void clear(int seq);              // -1 = all
  void rollback(int seq, int n);    // throws InvalidArgument when n exceeds what can be undone

  // ContextPolicy::Shift: drops tokens [n_keep, n_keep + n_discard) of `seq` and moves the
  // later tokens down by n_discard positions. Their K rows were rotated for the old
  // positions, so for every layer the backend rotates the moved K rows (heads of head_dim)
  // by -n_discard with layer's RoPE parameters, rope_for(layer) (RoPE rotations compose:
  // rot(p) then rot(-d) = rot(p - d)).
  using RopeFor = std::function<RopeParams(int layer)>;
  void shift(int seq, int n_keep, int n_discard, int head_dim, const RopeFor& rope_for);

  // Empty when every pool and table agree: reference counts equal the tables holding each
  // block, unowned blocks are free or cached, every held slot of a sequence holds its
  // ordinal as position (or nothing, behind a sliding window). Otherwise the first contradiction found. For tests.
  std::string audit() const;
  // Tokens a sequence holds, read back from its tables (global group). For tests.
  std::vector<int32_t> held_tokens(int seq) const;

 private:
  struct Group {
    int window = 0;
    std::vector<int> layers;        // model layer of each group layer
    std::unique_ptr<BlockPool> pool;
  };
  struct Table {
    std::vector<int32_t> blocks;    // logical block -> physical; -1 below `first` (given back)
    int64_t first = 0;              // first logical block held
  };
  struct SeqState {
    int n_tokens = 0;
    std::vector<Table> tables;      // per group
    std::vector<uint64_t> hashes;   // chained hash of each published logical block (global group)
    bool publishable = true;        // false after a shift: positions no longer follow the prompt's
  };
  int64_t row_of(const Table& t, int64_t ordinal) const {
    return static_cast<int64_t>(t.blocks[ordinal / cfg_.block_size]) * cfg_.block_size + ordinal % cfg_.block_size;
  }
  int new_blocks(int seq, int n_new) const;  // per group
  bool prefix_enabled() const { return cfg_.prefix_cache && groups_.size() == 1 && groups_[0].window == 0; }
  void check_seq(int seq, const char* what) const;
  void make_private(int g, Table& t, int64_t logical, int n_slots);
  void drop_blocks_from(int g, Table& t, int64_t logical);
  void give_back_window(int g, Table& t, int n_tokens);
  void truncate_hashes(SeqState& st, int64_t full_blocks);
  void shift_group(int g, SeqState& st, int n_keep, int n_discard, int head_dim, const RopeFor& rope_for);
  KVTable table_view(int g, int seq) const;
  void describe_storage();  // step_'s layers

  KVCacheConfig cfg_;
  std::vector<KVMemory*> backends_;  // per model layer
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  std::vector<Group> groups_;
  std::vector<int> group_of_, index_in_group_;  // per model layer
  std::vector<SeqState> seqs_;
  StepKV step_;  // step_view()'s, its layers filled once
};

}  // namespace ember
