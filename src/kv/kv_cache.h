// The KV cache: for every (layer, sequence) a contiguous ring of `capacity` slots, each slot
// one K row and one V row (n_head_kv * head_dim elements) stored as f32, f16, q8_0 or q4_0,
// plus the position held in the slot (-1 = empty). Attention reads the stored type directly
// through a KVView (backend/ops.h) and masks by slot position, so slot order is irrelevant.
//
// Capacity: n_ctx for global layers; window + n_ubatch for sliding-window layers (a prompt
// chunk writes up to n_ubatch tokens before its first query reads the window, so the ring
// must hold window + n_ubatch - 1 older tokens; capped at n_ctx).
//
// The i-th token held by a sequence lives in slot (i + offset) % capacity of every ring of
// that sequence, so appending, rolling back and clearing are O(tokens) bookkeeping. Rolling
// back n tokens is exact on global rings; on sliding-window rings it is exact while
// n <= capacity - window + 1 (= n_ubatch + 1 when the ring is smaller than n_ctx), beyond
// that the window's oldest tokens were already overwritten and rollback throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/ops.h"
#include "tensor/dtype.h"

namespace ember {

struct KVCacheConfig {
  int n_layer = 0;
  int n_seq = 1;
  int n_ctx = 0;               // tokens per sequence
  int n_ubatch = 512;
  int64_t k_row = 0;           // K elements per token per layer (n_head_kv * head_dim)
  int64_t v_row = 0;           // V elements per token per layer
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  std::vector<int> window;     // [n_layer] sliding window in tokens, 0 = global layer
};

// True for the types a KV ring can hold (f32, f16, q8_0, q4_0).
bool kv_type_supported(DType type);

class KVCache {
 public:
  explicit KVCache(const KVCacheConfig& cfg);  // throws InvalidArgument for bad types/rows
  ~KVCache();

  const KVCacheConfig& config() const { return cfg_; }
  int capacity(int layer) const { return capacity_[layer]; }
  size_t total_bytes() const;           // all rings, K + V + slot positions
  size_t bytes_per_token() const;       // K + V bytes one token costs across all layers
  static size_t bytes_for(const KVCacheConfig& cfg);  // total_bytes() without allocating

  int n_tokens(int seq) const { return seqs_[seq].n_tokens; }
  int next_pos(int seq) const { return seqs_[seq].next_pos; }

  // Reserves the slot for the next token of `seq` at position `pos` in every layer and
  // returns its ring index (the same number is then used with k_slot/v_slot for each layer).
  // The caller stores the rows before attention reads them.
  struct Slot { int64_t index; };   // token ordinal within the sequence
  Slot append(int seq, int32_t pos);

  // Row pointers of token ordinal `slot` in layer `layer`'s ring of `seq`.
  void* k_row(int layer, int seq, Slot slot);
  void* v_row(int layer, int seq, Slot slot);

  KVView view(int layer, int seq) const;

  void clear(int seq);              // -1 = all
  void rollback(int seq, int n);    // throws InvalidArgument when n exceeds what can be undone

  // ContextPolicy::Shift: drops tokens [n_keep, n_keep + n_discard) of `seq` and moves the
  // later tokens down by n_discard positions. Their K rows were rotated for the old
  // positions, so for every layer the cache decodes the moved K rows to f32 (ops::get_rows),
  // calls rerope(layer, rows, delta) with delta[i] = -n_discard (RoPE rotations compose:
  // rot(p) then rot(-d) = rot(p - d)) and re-encodes them (ops::store_row).
  using Rerope = std::function<void(int layer, F32Mat rows, const int32_t* delta)>;
  void shift(ThreadPool& pool, int seq, int n_keep, int n_discard, const Rerope& rerope);

 private:
  struct Ring {
    std::vector<uint8_t> k, v;       // capacity rows each
    std::vector<int32_t> pos;        // capacity entries, -1 = empty
    int64_t offset = 0;              // slot of token ordinal i is (i + offset) % capacity
  };
  struct SeqState {
    int n_tokens = 0;      // tokens held = ordinal of the next token = its position
    int next_pos = 0;      // equals n_tokens: positions are contiguous from 0 (shift keeps it so)
    int64_t high_water = 0;  // 1 + largest ordinal written since clear (rings lose ordinals < high_water - capacity)
  };
  Ring& ring(int layer, int seq) { return rings_[static_cast<size_t>(layer) * cfg_.n_seq + seq]; }
  const Ring& ring(int layer, int seq) const { return rings_[static_cast<size_t>(layer) * cfg_.n_seq + seq]; }
  int64_t slot_of(int layer, int seq, int64_t ordinal) const;
  void check_seq(int seq, const char* what) const;

  KVCacheConfig cfg_;
  std::vector<int> capacity_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  std::vector<Ring> rings_;
  std::vector<SeqState> seqs_;
};

}  // namespace ember
