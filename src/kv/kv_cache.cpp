#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace ember {

bool kv_type_supported(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::Q8_0 || type == DType::Q4_0;
}

static size_t row_bytes_checked(DType type, int64_t n, const char* which) {
  if (!kv_type_supported(type))
    fail(ErrorKind::InvalidArgument, "KV cache {} type {} unsupported (use f32, f16, q8_0 or q4_0)", which,
         dtype_name(type));
  const int block = dtype_size(type).block_size;
  if (n <= 0 || n % block != 0)
    fail(ErrorKind::InvalidArgument, "KV cache {} type {} needs rows that are a multiple of {} elements, model has {}",
         which, dtype_name(type), block, n);
  return dtype_row_bytes(type, n);
}

static std::vector<int> capacities(const KVCacheConfig& cfg) {
  std::vector<int> cap(cfg.n_layer);
  for (int il = 0; il < cfg.n_layer; ++il) {
    const int w = cfg.window.empty() ? 0 : cfg.window[il];
    // A sliding-window ring holds the window plus one ubatch: a prompt chunk writes all its
    // tokens before its first query reads the window behind it.
    cap[il] = w > 0 ? std::min(cfg.n_ctx, w + cfg.n_ubatch) : cfg.n_ctx;
  }
  return cap;
}

size_t KVCache::bytes_for(const KVCacheConfig& cfg) {
  const size_t kb = row_bytes_checked(cfg.k_type, cfg.k_row, "K");
  const size_t vb = row_bytes_checked(cfg.v_type, cfg.v_row, "V");
  size_t total = 0;
  for (int c : capacities(cfg)) total += static_cast<size_t>(c) * (kb + vb + sizeof(int32_t));
  return total * static_cast<size_t>(cfg.n_seq);
}

KVCache::KVCache(const KVCacheConfig& cfg) : cfg_(cfg) {
  if (cfg.n_layer <= 0 || cfg.n_seq <= 0 || cfg.n_ctx <= 0 || cfg.n_ubatch <= 0)
    fail(ErrorKind::InvalidArgument, "KV cache: n_layer {}, n_seq {}, n_ctx {}, n_ubatch {} must be positive",
         cfg.n_layer, cfg.n_seq, cfg.n_ctx, cfg.n_ubatch);
  if (!cfg.window.empty() && static_cast<int>(cfg.window.size()) != cfg.n_layer)
    fail(ErrorKind::Internal, "KV cache: window array has {} entries for {} layers", cfg.window.size(), cfg.n_layer);
  k_row_bytes_ = row_bytes_checked(cfg.k_type, cfg.k_row, "K");
  v_row_bytes_ = row_bytes_checked(cfg.v_type, cfg.v_row, "V");
  capacity_ = capacities(cfg);
  rings_.resize(static_cast<size_t>(cfg.n_layer) * cfg.n_seq);
  for (int il = 0; il < cfg.n_layer; ++il) {
    for (int s = 0; s < cfg.n_seq; ++s) {
      Ring& r = ring(il, s);
      r.k.assign(static_cast<size_t>(capacity_[il]) * k_row_bytes_, 0);
      r.v.assign(static_cast<size_t>(capacity_[il]) * v_row_bytes_, 0);
      r.pos.assign(capacity_[il], -1);
    }
  }
  seqs_.resize(cfg.n_seq);
}

KVCache::~KVCache() = default;

size_t KVCache::total_bytes() const { return bytes_for(cfg_); }

size_t KVCache::bytes_per_token() const {
  return static_cast<size_t>(cfg_.n_layer) * (k_row_bytes_ + v_row_bytes_);
}

void KVCache::check_seq(int seq, const char* what) const {
  if (seq < 0 || seq >= cfg_.n_seq)
    fail(ErrorKind::InvalidArgument, "KV cache {}: sequence {} out of range (context has {})", what, seq, cfg_.n_seq);
}

int64_t KVCache::slot_of(int layer, int seq, int64_t ordinal) const {
  const int64_t cap = capacity_[layer];
  return (ordinal + ring(layer, seq).offset) % cap;
}

KVCache::Slot KVCache::append(int seq, int32_t pos) {
  check_seq(seq, "append");
  SeqState& st = seqs_[seq];
  if (pos != st.next_pos)
    fail(ErrorKind::Internal, "KV cache append: sequence {} expects position {}, got {}", seq, st.next_pos, pos);
  if (st.n_tokens >= cfg_.n_ctx)
    fail(ErrorKind::ContextFull, "sequence {} holds {} tokens, the context has room for {}", seq, st.n_tokens,
         cfg_.n_ctx);
  const int64_t ordinal = st.n_tokens;
  for (int il = 0; il < cfg_.n_layer; ++il) ring(il, seq).pos[slot_of(il, seq, ordinal)] = pos;
  st.n_tokens += 1;
  st.next_pos += 1;
  st.high_water = std::max<int64_t>(st.high_water, st.n_tokens);
  return Slot{ordinal};
}

void* KVCache::k_row(int layer, int seq, Slot slot) {
  return ring(layer, seq).k.data() + slot_of(layer, seq, slot.index) * k_row_bytes_;
}

void* KVCache::v_row(int layer, int seq, Slot slot) {
  return ring(layer, seq).v.data() + slot_of(layer, seq, slot.index) * v_row_bytes_;
}

KVView KVCache::view(int layer, int seq) const {
  const Ring& r = ring(layer, seq);
  KVView v;
  v.k_type = cfg_.k_type;
  v.v_type = cfg_.v_type;
  v.k = r.k.data();
  v.v = r.v.data();
  v.k_row_bytes = k_row_bytes_;
  v.v_row_bytes = v_row_bytes_;
  v.slot_pos = r.pos.data();
  v.n_slots = capacity_[layer];
  return v;
}

void KVCache::clear(int seq) {
  if (seq < 0) {
    for (int s = 0; s < cfg_.n_seq; ++s) clear(s);
    return;
  }
  check_seq(seq, "clear");
  for (int il = 0; il < cfg_.n_layer; ++il) {
    Ring& r = ring(il, seq);
    std::fill(r.pos.begin(), r.pos.end(), -1);
    r.offset = 0;
  }
  seqs_[seq] = SeqState{};
}

void KVCache::rollback(int seq, int n) {
  check_seq(seq, "rollback");
  SeqState& st = seqs_[seq];
  if (n < 0 || n > st.n_tokens)
    fail(ErrorKind::InvalidArgument, "KV rollback of {} tokens: sequence {} holds {}", n, seq, st.n_tokens);
  const int64_t keep = st.n_tokens - n;
  // A ring that wrapped lost the ordinals below high_water - capacity; the next query
  // (ordinal `keep`) must still find its whole window behind it.
  for (int il = 0; il < cfg_.n_layer; ++il) {
    const int w = cfg_.window.empty() ? 0 : cfg_.window[il];
    const int64_t lost_below = st.high_water - capacity_[il];
    const int64_t needed_from = w > 0 ? std::max<int64_t>(0, keep - w + 1) : 0;
    if (lost_below > needed_from)
      fail(ErrorKind::InvalidArgument,
           "KV rollback of {} tokens on sequence {}: layer {} keeps a ring of {} slots (window {}), which no longer "
           "holds the tokens from position {} on",
           n, seq, il, capacity_[il], w, needed_from);
  }
  for (int64_t o = keep; o < st.n_tokens; ++o)
    for (int il = 0; il < cfg_.n_layer; ++il) ring(il, seq).pos[slot_of(il, seq, o)] = -1;
  st.n_tokens = static_cast<int>(keep);
  st.next_pos = static_cast<int>(keep);
}

void KVCache::shift(ThreadPool& pool, int seq, int n_keep, int n_discard, const Rerope& rerope) {
  check_seq(seq, "shift");
  SeqState& st = seqs_[seq];
  if (n_keep < 0 || n_discard <= 0 || n_keep + n_discard > st.n_tokens)
    fail(ErrorKind::InvalidArgument, "KV shift: keep {} + discard {} tokens of sequence {} holding {}", n_keep,
         n_discard, seq, st.n_tokens);
  const int n_tokens = st.n_tokens;
  std::vector<int32_t> moved_slots, delta;
  std::vector<float> rows;
  for (int il = 0; il < cfg_.n_layer; ++il) {
    Ring& r = ring(il, seq);
    const int cap = capacity_[il];
    moved_slots.clear();
    if (cap >= cfg_.n_ctx) {
      // A ring that holds the whole context never wrapped (offset 0, slot = ordinal):
      // compact the survivors down over the discarded tokens.
      for (int o = n_keep + n_discard; o < n_tokens; ++o) {
        const int to = o - n_discard;
        std::memcpy(r.k.data() + to * k_row_bytes_, r.k.data() + o * k_row_bytes_, k_row_bytes_);
        std::memcpy(r.v.data() + to * v_row_bytes_, r.v.data() + o * v_row_bytes_, v_row_bytes_);
        r.pos[to] = r.pos[o] - n_discard;
        moved_slots.push_back(to);
      }
      for (int o = n_tokens - n_discard; o < n_tokens; ++o) r.pos[o] = -1;
    } else {
      // A wrapped sliding-window ring: survivors stay in their slots (the offset absorbs the
      // renumbering), discarded tokens become holes.
      for (int s = 0; s < cap; ++s) {
        const int32_t p = r.pos[s];
        if (p < n_keep) continue;
        if (p < n_keep + n_discard) {
          r.pos[s] = -1;
        } else {
          r.pos[s] = p - n_discard;
          moved_slots.push_back(s);
        }
      }
      r.offset = (r.offset + n_discard) % cap;
    }
    if (moved_slots.empty()) continue;
    const int64_t n = static_cast<int64_t>(moved_slots.size());
    rows.resize(static_cast<size_t>(n * cfg_.k_row));
    delta.assign(n, -n_discard);
    MatView table{cfg_.k_type, cfg_.k_row, cap, k_row_bytes_, r.k.data()};
    F32Mat out{rows.data(), cfg_.k_row, n, cfg_.k_row};
    ops::get_rows(pool, table, moved_slots.data(), n, out);
    rerope(il, out, delta.data());
    for (int64_t i = 0; i < n; ++i)
      ops::store_row(out.row(i), cfg_.k_row, cfg_.k_type, r.k.data() + moved_slots[i] * k_row_bytes_);
  }
  st.n_tokens -= n_discard;
  st.next_pos -= n_discard;
  st.high_water = std::max<int64_t>(st.n_tokens, st.high_water - n_discard);
}

}  // namespace ember
