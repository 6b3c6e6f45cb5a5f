#include "kv/block_pool.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace ember {

static size_t slots_of(const BlockPoolConfig& c) { return static_cast<size_t>(c.n_blocks) * c.block_size; }

size_t BlockPool::bytes_for(const BlockPoolConfig& c) {
  const size_t per_slot = static_cast<size_t>(c.n_layers) * (dtype_row_bytes(c.k_type, c.k_row) + dtype_row_bytes(c.v_type, c.v_row)) +
                          2 * sizeof(int32_t);
  return slots_of(c) * per_slot;
}

BlockPool::BlockPool(const BlockPoolConfig& cfg, std::vector<KVMemory*> memory) : cfg_(cfg), memory_(std::move(memory)) {
  if (cfg.n_layers <= 0 || cfg.n_blocks <= 0 || cfg.block_size <= 0)
    fail(ErrorKind::InvalidArgument, "KV block pool: {} layers, {} blocks of {} tokens must all be positive",
         cfg.n_layers, cfg.n_blocks, cfg.block_size);
  k_row_bytes_ = dtype_row_bytes(cfg.k_type, cfg.k_row);
  v_row_bytes_ = dtype_row_bytes(cfg.v_type, cfg.v_row);
  const size_t slots = slots_of(cfg);
  if (static_cast<int>(memory_.size()) != cfg.n_layers)
    fail(ErrorKind::Internal, "KV block pool: {} backends for {} layers", memory_.size(), cfg.n_layers);
  for (int il = 0; il < cfg.n_layers; ++il) {
    k_.push_back(memory_[il]->allocate(slots * k_row_bytes_));
    v_.push_back(memory_[il]->allocate(slots * v_row_bytes_));
  }
  pos_.assign(slots, -1);
  tokens_.assign(slots, -1);
  ref_.assign(cfg.n_blocks, 0);
  lru_at_.resize(cfg.n_blocks);
  hash_of_.resize(cfg.n_blocks);
  // Popped from the back: block 0 goes first, so allocation order is deterministic.
  for (int b = cfg.n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

void BlockPool::clear_slots(int block) {
  const size_t first = static_cast<size_t>(block) * cfg_.block_size;
  std::fill_n(pos_.begin() + first, cfg_.block_size, -1);
  std::fill_n(tokens_.begin() + first, cfg_.block_size, -1);
}

int BlockPool::allocate() {
  if (free_.empty() && !lru_.empty()) unpublish(lru_.front());  // evicts: the block becomes free
  if (free_.empty()) return -1;
  const int b = free_.back();
  free_.pop_back();
  ref_[b] = 1;
  clear_slots(b);
  return b;
}

void BlockPool::retain(int block) {
  if (ref_[block] == 0) {
    if (!hash_of_[block].has) fail(ErrorKind::Internal, "KV block {} retained while free", block);
    lru_.erase(lru_at_[block]);
  }
  ref_[block] += 1;
}

void BlockPool::release(int block) {
  if (ref_[block] <= 0) fail(ErrorKind::Internal, "KV block {} released with no owner", block);
  if (--ref_[block] > 0) return;
  if (hash_of_[block].has) {
    lru_at_[block] = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

void BlockPool::publish(int block, uint64_t hash) {
  if (hash_of_[block].has || by_hash_.count(hash)) return;
  hash_of_[block] = Hash{hash, true};
  by_hash_.emplace(hash, block);
}

void BlockPool::unpublish(int block) {
  Hash& h = hash_of_[block];
  if (!h.has) return;
  by_hash_.erase(h.value);
  h = Hash{};
  if (ref_[block] == 0) {  // a cached block that nobody can find again is free
    lru_.erase(lru_at_[block]);
    free_.push_back(block);
  }
}

int BlockPool::lookup(uint64_t hash, const int32_t* tokens) const {
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return -1;
  const int32_t* held = tokens_.data() + static_cast<size_t>(it->second) * cfg_.block_size;
  return std::equal(tokens, tokens + cfg_.block_size, held) ? it->second : -1;
}

// FNV-1a over the previous hash and the tokens' bytes, then a splitmix64 finaliser.
uint64_t BlockPool::chain_hash(uint64_t prev, const int32_t* tokens, int n) {
  uint64_t h = 0xcbf29ce484222325ull ^ prev;
  auto mix = [&](uint32_t x) {
    for (int i = 0; i < 4; ++i) {
      h ^= (x >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  };
  for (int i = 0; i < n; ++i) mix(static_cast<uint32_t>(tokens[i]));
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

void BlockPool::copy_slots(int64_t from, int64_t to, int n) {
  for (int il = 0; il < cfg_.n_layers; ++il) {
    memory_[il]->copy(k_row(il, to), k_row(il, from), n * k_row_bytes_);
    memory_[il]->copy(v_row(il, to), v_row(il, from), n * v_row_bytes_);
  }
  std::copy_n(pos_.begin() + from, n, pos_.begin() + to);
  std::copy_n(tokens_.begin() + from, n, tokens_.begin() + to);
}

}  // namespace ember
