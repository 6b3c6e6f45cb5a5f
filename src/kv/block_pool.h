// The KV block pool of one layer group (PagedAttention): `n_blocks` fixed-size blocks of
// `block_size` token slots, each slot one K row and one V row per layer of the group plus
// the position (and token) it holds. Sequences own blocks by reference count through their
// block tables (kv_cache.h); the pool knows nothing of sequences.
//
// Prefix cache: a full block can be published under a hash chained over its tokens and the
// previous block's hash. Published blocks stay after their last owner lets go, on a
// least-recently-used list, until allocate() needs the room; a lookup confirms a hash hit by
// comparing the tokens. Invariant kept by the callers: a block shared by several owners
// (ref > 1) is published, full, and never written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/kv_memory.h"
#include "tensor/dtype.h"

namespace ember {

struct BlockPoolConfig {
  int n_layers = 0;        // layers of the group
  int n_blocks = 0;
  int block_size = 32;     // token slots per block
  int64_t k_row = 0;       // K elements per slot per layer
  int64_t v_row = 0;
  DType k_type = DType::F16;
  DType v_type = DType::F16;
};

class BlockPool {
 public:
  // K/V rows of layer i live in memory[i]'s buffers (host or device); positions and tokens
  // on the host.
  BlockPool(const BlockPoolConfig& cfg, std::vector<KVMemory*> memory);
  static size_t bytes_for(const BlockPoolConfig& cfg);  // K, V, positions and tokens of every block

  const BlockPoolConfig& config() const { return cfg_; }
  int block_size() const { return cfg_.block_size; }
  int n_blocks() const { return cfg_.n_blocks; }
  int n_available() const { return static_cast<int>(free_.size() + lru_.size()); }  // free + evictable
  int n_cached() const { return static_cast<int>(lru_.size()); }                     // published, unowned

  // A block with reference count 1 and every slot empty: a free block, else the least
  // recently used published one (its hash forgotten). -1 when every block is owned.
  int allocate();
  void retain(int block);   // one more owner (a cached block leaves the LRU list)
  void release(int block);  // one owner less; at 0 a published block is cached, another freed
  int ref_count(int block) const { return ref_[block]; }

  // Prefix cache (see the header). publish() of an already published hash keeps the first.
  void publish(int block, uint64_t hash);
  void unpublish(int block);
  bool published(int block) const { return hash_of_[block].has; }
  // The published block under `hash` whose tokens are tokens[0, block_size), or -1.
  int lookup(uint64_t hash, const int32_t* tokens) const;
  static uint64_t chain_hash(uint64_t prev, const int32_t* tokens, int n);

  // Slot s = block * block_size + j. Backend memory: only the backend reads through these.
  uint8_t* k_row(int layer, int64_t slot) { return k_data(layer) + slot * k_row_bytes_; }
  uint8_t* v_row(int layer, int64_t slot) { return v_data(layer) + slot * v_row_bytes_; }
  uint8_t* k_data(int layer) const { return static_cast<uint8_t*>(k_[layer]->data()); }
  uint8_t* v_data(int layer) const { return static_cast<uint8_t*>(v_[layer]->data()); }
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }
  int32_t* pos() { return pos_.data(); }  // position held by each slot, -1 = empty
  const int32_t* pos() const { return pos_.data(); }
  int32_t* tokens() { return tokens_.data(); }  // token held by each slot
  const int32_t* tokens() const { return tokens_.data(); }
  // Copies n slots from slot `from` on to slot `to` on (every layer, positions, tokens).
  void copy_slots(int64_t from, int64_t to, int n);

 private:
  struct Hash {
    uint64_t value = 0;
    bool has = false;
  };
  void clear_slots(int block);

  BlockPoolConfig cfg_;
  std::vector<KVMemory*> memory_;  // per layer
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  std::vector<std::unique_ptr<BackendBuffer>> k_, v_;  // per layer: n_blocks * block_size rows
  std::vector<int32_t> pos_, tokens_;        // n_blocks * block_size
  std::vector<int> ref_;
  std::vector<int> free_;                    // unowned, unpublished; popped from the back
  std::list<int> lru_;                       // unowned, published; front = least recent
  std::vector<std::list<int>::iterator> lru_at_;
  std::vector<Hash> hash_of_;
  std::unordered_map<uint64_t, int> by_hash_;
};

}  // namespace ember
