// What a backend sees of the KV cache: views the cache (kv/kv_cache.h) builds and the
// backend reads, so neither knows the other's types. A step's view (StepKV) names every
// layer's storage, the storage row of each token the step stores, and each sequence's block
// table; attention reads one layer of one sequence through a KVView.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace ember {

class KVMemory;

// One layer's view of a sequence's KV cache, as attention reads it: `n_slots` logical slots,
// each one K row and one V row, and the position each holds (-1 = empty). Slots are either
// contiguous (blocks == nullptr: slot j is row j) or paged: logical slot j lives in row
// blocks[j / block_size] * block_size + j % block_size of the k/v/slot_pos arrays (the KV
// block pool's storage), n_slots = n_blocks * block_size.
struct KVView {
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  const void* k = nullptr;  // rows of n_head_kv * head_dim elements of k_type
  const void* v = nullptr;  // same layout for v_type
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  const int32_t* slot_pos = nullptr;  // position stored in each row, -1 when empty
  int64_t n_slots = 0;
  const int32_t* blocks = nullptr;    // block table (paged), or nullptr (contiguous)
  int block_size = 0;                 // rows per block when paged: a multiple of 32
  int64_t first_slot = 0;             // the sequence's ordinal of logical slot 0 (blocks given
                                      // back before it); a multiple of 32, splits align to it

  // Row of logical slot j in k, v and slot_pos.
  int64_t row_of(int64_t j) const { return blocks ? static_cast<int64_t>(blocks[j / block_size]) * block_size + j % block_size : j; }
};

// The rows of one layer: every block of its group's pool, in the memory of `memory`.
struct KVLayerStorage {
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  void* k = nullptr;
  void* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  const int32_t* slot_pos = nullptr;  // host: position held by each row, -1 = empty
  int group = 0;                      // layers of one group share rows and block tables
  const KVMemory* memory = nullptr;   // whose memory holds k and v
};

// The blocks one sequence holds in one group: ordinals [first_slot, n_tokens), ordinal o in
// row blocks[(o - first_slot) / block_size] * block_size + o % block_size.
struct KVTable {
  const int32_t* blocks = nullptr;
  int n_blocks = 0;
  int64_t first_slot = 0;  // a multiple of block_size (blocks before it were given back)
  int n_tokens = 0;
};

// Attention's view of one sequence's table over one layer's storage.
inline KVView kv_view(const KVLayerStorage& l, const KVTable& t, int block_size) {
  return KVView{l.k_type, l.v_type, l.k, l.v, l.k_row_bytes, l.v_row_bytes, l.slot_pos,
                static_cast<int64_t>(t.n_blocks) * block_size, t.blocks, block_size, t.first_slot};
}

// One step's KV, valid until the cache changes (the next append, commit, rollback or shift).
struct StepKV {
  int block_size = 0;
  int n_groups = 0;
  int n_seq = 0;
  int n_tokens = 0;
  int table_capacity = 0;              // blocks any table holds at most (n_ctx tokens' worth)
  std::vector<KVLayerStorage> layers;  // per model layer
  std::vector<int64_t> rows;           // [group * n_tokens + t]: storage row of step token t
  std::vector<KVTable> tables;         // [group * n_seq + seq]

  int64_t row(int group, int t) const { return rows[static_cast<size_t>(group) * n_tokens + t]; }
  const KVTable& table(int group, int seq) const { return tables[static_cast<size_t>(group) * n_seq + seq]; }
  bool all_layers_in(const KVMemory* m) const {
    for (const KVLayerStorage& l : layers)
      if (l.memory != m) return false;
    return true;
  }
  // What attention of layer `layer` reads for sequence `seq`.
  KVView view(int layer, int seq) const { return kv_view(layers[layer], table(layers[layer].group, seq), block_size); }
};

}  // namespace ember
