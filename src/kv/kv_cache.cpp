#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "util/error.h"

namespace ember {

static size_t row_bytes_checked(DType type, int64_t n, const char* which) {
  if (!kv_type_known(type))
    fail(ErrorKind::InvalidArgument, "KV cache {} type {} unsupported (use {})", which, dtype_name(type),
         kv_type_names());
  const int block = dtype_size(type).block_size;
  if (n <= 0 || n % block != 0)
    fail(ErrorKind::InvalidArgument, "KV cache {} type {} needs rows that are a multiple of {} elements, model has {}",
         which, dtype_name(type), block, n);
  return dtype_row_bytes(type, n);
}

static int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

static int rollback_allowance(const KVCacheConfig& c) { return c.rollback_tokens >= 0 ? c.rollback_tokens : c.n_ubatch; }

namespace {

struct GroupPlan {
  int window = 0;
  std::vector<int> layers;
  BlockPoolConfig pool;
};

// Layers grouped by window in order of first appearance, each group's pool sized: the
// global group by n_blocks (or every sequence at n_ctx); a sliding-window group so that no
// sequence can run out: the window and the rollback allowance behind the newest token, a
// ubatch ahead of it, and the partial blocks at either end.
std::vector<GroupPlan> plan_groups(const KVCacheConfig& c) {
  std::vector<GroupPlan> groups;
  for (int il = 0; il < c.n_layer; ++il) {
    const int w = c.window.empty() ? 0 : c.window[il];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const GroupPlan& g) { return g.window == w; });
    if (it == groups.end()) it = groups.insert(groups.end(), GroupPlan{w, {}, {}});
    it->layers.push_back(il);
  }
  const int per_seq_ctx = ceil_div(c.n_ctx, c.block_size);
  for (GroupPlan& g : groups) {
    int per_seq = per_seq_ctx;
    if (g.window > 0)
      per_seq = std::min(per_seq_ctx + 1,
                         ceil_div(g.window + rollback_allowance(c), c.block_size) + ceil_div(c.n_ubatch, c.block_size) + 3);
    g.pool.n_layers = static_cast<int>(g.layers.size());
    g.pool.n_blocks = g.window == 0 && c.n_blocks > 0 ? c.n_blocks : c.n_seq * per_seq;
    g.pool.block_size = c.block_size;
    g.pool.k_row = c.k_row;
    g.pool.v_row = c.v_row;
    g.pool.k_type = c.k_type;
    g.pool.v_type = c.v_type;
  }
  return groups;
}

void check_config(const KVCacheConfig& c) {
  if (c.n_layer <= 0 || c.n_seq <= 0 || c.n_ctx <= 0 || c.n_ubatch <= 0)
    fail(ErrorKind::InvalidArgument, "KV cache: n_layer {}, n_seq {}, n_ctx {}, n_ubatch {} must be positive", c.n_layer,
         c.n_seq, c.n_ctx, c.n_ubatch);
  if (!c.window.empty() && static_cast<int>(c.window.size()) != c.n_layer)
    fail(ErrorKind::Internal, "KV cache: window array has {} entries for {} layers", c.window.size(), c.n_layer);
  if (c.block_size <= 0 || c.block_size % 32 != 0)
    fail(ErrorKind::InvalidArgument, "KV cache: blocks of {} tokens (must be a positive multiple of 32)", c.block_size);
  if (c.n_blocks < 0) fail(ErrorKind::InvalidArgument, "KV cache: {} blocks", c.n_blocks);
  row_bytes_checked(c.k_type, c.k_row, "K");
  row_bytes_checked(c.v_type, c.v_row, "V");
}

}  // namespace

size_t KVCache::bytes_for(const KVCacheConfig& cfg) {
  check_config(cfg);
  size_t total = 0;
  for (const GroupPlan& g : plan_groups(cfg)) total += BlockPool::bytes_for(g.pool);
  return total;
}

KVCache::KVCache(const KVCacheConfig& cfg, KVMemory& backend)
    : KVCache(cfg, std::vector<KVMemory*>(static_cast<size_t>(std::max(cfg.n_layer, 0)), &backend)) {}

KVCache::KVCache(const KVCacheConfig& cfg, std::vector<KVMemory*> backends) : cfg_(cfg), backends_(std::move(backends)) {
  check_config(cfg);
  if (static_cast<int>(backends_.size()) != cfg.n_layer)
    fail(ErrorKind::Internal, "KV cache: {} backends for {} layers", backends_.size(), cfg.n_layer);
  k_row_bytes_ = dtype_row_bytes(cfg.k_type, cfg.k_row);
  v_row_bytes_ = dtype_row_bytes(cfg.v_type, cfg.v_row);
  group_of_.assign(cfg.n_layer, 0);
  index_in_group_.assign(cfg.n_layer, 0);
  for (GroupPlan& g : plan_groups(cfg)) {
    for (size_t i = 0; i < g.layers.size(); ++i) {
      group_of_[g.layers[i]] = static_cast<int>(groups_.size());
      index_in_group_[g.layers[i]] = static_cast<int>(i);
    }
    std::vector<KVMemory*> memory;
    for (int il : g.layers) memory.push_back(backends_[il]);
    groups_.push_back(Group{g.window, g.layers, std::make_unique<BlockPool>(g.pool, std::move(memory))});
  }
  seqs_.resize(cfg.n_seq);
  for (SeqState& s : seqs_) s.tables.resize(groups_.size());
  describe_storage();
}

// The pools never move their rows, so the step view's layers are filled once.
void KVCache::describe_storage() {
  step_.block_size = cfg_.block_size;
  step_.n_groups = static_cast<int>(groups_.size());
  step_.n_seq = cfg_.n_seq;
  step_.table_capacity = (cfg_.n_ctx + cfg_.block_size - 1) / cfg_.block_size;
  for (int il = 0; il < cfg_.n_layer; ++il) {
    const BlockPool& pool = *groups_[group_of_[il]].pool;
    const int i = index_in_group_[il];
    step_.layers.push_back(KVLayerStorage{cfg_.k_type, cfg_.v_type, pool.k_data(i), pool.v_data(i), k_row_bytes_,
                                          v_row_bytes_, pool.pos(), group_of_[il], backends_[il]});
  }
}

KVCache::~KVCache() = default;

size_t KVCache::total_bytes() const {
  size_t total = 0;
  for (const Group& g : groups_) total += BlockPool::bytes_for(g.pool->config());
  return total;
}

size_t KVCache::bytes_per_token() const {
  return static_cast<size_t>(cfg_.n_layer) * (k_row_bytes_ + v_row_bytes_);
}

void KVCache::check_seq(int seq, const char* what) const {
  if (seq < 0 || seq >= cfg_.n_seq)
    fail(ErrorKind::InvalidArgument, "KV cache {}: sequence {} out of range (context has {})", what, seq, cfg_.n_seq);
}

int KVCache::new_blocks(int seq, int n_new) const {
  const int held = seqs_[seq].n_tokens;
  return ceil_div(held + n_new, cfg_.block_size) - ceil_div(held, cfg_.block_size);
}

int KVCache::blocks_to_append(int seq, int n_new) const {
  return new_blocks(seq, n_new) * static_cast<int>(groups_.size());
}

// Only global groups can run out: sliding-window pools are sized for every sequence.
bool KVCache::fits(std::span<const int> n_new) const {
  int need = 0;
  for (int s = 0; s < cfg_.n_seq && s < static_cast<int>(n_new.size()); ++s) need += new_blocks(s, n_new[s]);
  for (const Group& g : groups_)
    if (g.window == 0 && need > g.pool->n_available()) return false;
  return true;
}

std::vector<KVBlockStats> KVCache::stats() const {
  std::vector<KVBlockStats> out;
  for (const Group& g : groups_) {
    KVBlockStats s;
    s.window = g.window;
    s.total = g.pool->n_blocks();
    s.cached = g.pool->n_cached();
    s.free = g.pool->n_available() - s.cached;
    s.used = s.total - s.cached - s.free;
    out.push_back(s);
  }
  return out;
}

KVBlockStats KVCache::global_stats() const {
  for (const KVBlockStats& g : stats())
    if (g.window == 0) return g;
  return KVBlockStats{};
}

int KVCache::blocks_held(int seq) const {
  int n = 0;
  for (const Table& t : seqs_[seq].tables) n += static_cast<int>(t.blocks.size() - t.first);
  return n;
}

KVCache::Slot KVCache::append(int seq, int32_t pos, int32_t token) {
  check_seq(seq, "append");
  SeqState& st = seqs_[seq];
  if (pos != st.n_tokens)
    fail(ErrorKind::Internal, "KV cache append: sequence {} expects position {}, got {}", seq, st.n_tokens, pos);
  if (st.n_tokens >= cfg_.n_ctx)
    fail(ErrorKind::ContextFull, "sequence {} holds {} tokens, the context has room for {}", seq, st.n_tokens,
         cfg_.n_ctx);
  const int64_t ordinal = st.n_tokens;
  const int bs = cfg_.block_size;
  if (ordinal % bs == 0) {
    for (const Group& g : groups_)
      if (g.pool->n_available() == 0)
        fail(ErrorKind::OutOfMemory, "KV block pool exhausted: all {} blocks of {} tokens are held (sequence {} at {} tokens)",
             g.pool->n_blocks(), bs, seq, st.n_tokens);
    for (size_t g = 0; g < groups_.size(); ++g) st.tables[g].blocks.push_back(groups_[g].pool->allocate());
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int64_t row = row_of(st.tables[g], ordinal);
    groups_[g].pool->pos()[row] = pos;
    groups_[g].pool->tokens()[row] = token;
  }
  st.n_tokens += 1;
  return Slot{ordinal};
}

void* KVCache::k_row(int layer, int seq, Slot slot) {
  const int g = group_of_[layer];
  return groups_[g].pool->k_row(index_in_group_[layer], row_of(seqs_[seq].tables[g], slot.index));
}

KVTable KVCache::table_view(int g, int seq) const {
  const Table& t = seqs_[seq].tables[g];
  return KVTable{t.blocks.data() + t.first, static_cast<int>(t.blocks.size() - t.first), t.first * cfg_.block_size,
                 seqs_[seq].n_tokens};
}

KVView KVCache::view(int layer, int seq) const {
  return kv_view(step_.layers[layer], table_view(group_of_[layer], seq), cfg_.block_size);
}

const StepKV& KVCache::step_view(std::span<const int32_t> seq, std::span<const int64_t> slots) {
  const int n = static_cast<int>(slots.size()), n_groups = static_cast<int>(groups_.size());
  step_.n_tokens = n;
  step_.rows.resize(static_cast<size_t>(n_groups) * n);
  step_.tables.resize(static_cast<size_t>(n_groups) * cfg_.n_seq);
  for (int g = 0; g < n_groups; ++g) {
    for (int t = 0; t < n; ++t) step_.rows[static_cast<size_t>(g) * n + t] = row_of(seqs_[seq[t]].tables[g], slots[t]);
    for (int s = 0; s < cfg_.n_seq; ++s) step_.tables[static_cast<size_t>(g) * cfg_.n_seq + s] = table_view(g, s);
  }
  return step_;
}

// Gives back the leading blocks whose every token lies behind what the newest query and a
// rollback of the allowance can still see.
void KVCache::give_back_window(int g, Table& t, int n_tokens) {
  const int64_t needed_from = static_cast<int64_t>(n_tokens) - groups_[g].window - rollback_allowance(cfg_) + 1;
  const int bs = cfg_.block_size;
  while (t.first < static_cast<int64_t>(t.blocks.size()) && (t.first + 1) * bs <= needed_from) {
    groups_[g].pool->release(t.blocks[t.first]);
    t.blocks[t.first++] = -1;
  }
}

void KVCache::commit(int seq) {
  check_seq(seq, "commit");
  SeqState& st = seqs_[seq];
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].window > 0) give_back_window(static_cast<int>(g), st.tables[g], st.n_tokens);
  if (!prefix_enabled() || !st.publishable) return;
  BlockPool& pool = *groups_[0].pool;
  const Table& t = st.tables[0];
  const int bs = cfg_.block_size;
  for (size_t b = st.hashes.size(); b < static_cast<size_t>(st.n_tokens / bs); ++b) {
    const uint64_t prev = b ? st.hashes[b - 1] : 0;
    const uint64_t h = BlockPool::chain_hash(prev, pool.tokens() + static_cast<size_t>(t.blocks[b]) * bs, bs);
    pool.publish(t.blocks[b], h);
    st.hashes.push_back(h);
  }
}

int KVCache::attach_prefix(int seq, std::span<const int32_t> tokens) {
  check_seq(seq, "attach_prefix");
  SeqState& st = seqs_[seq];
  if (st.n_tokens != 0) fail(ErrorKind::Internal, "KV attach_prefix: sequence {} is not empty", seq);
  if (!prefix_enabled() || tokens.empty()) return 0;
  const int bs = cfg_.block_size;
  const size_t max_blocks = std::min((tokens.size() - 1) / bs, static_cast<size_t>(cfg_.n_ctx / bs));
  BlockPool& pool = *groups_[0].pool;
  Table& t = st.tables[0];
  uint64_t prev = 0;
  for (size_t b = 0; b < max_blocks; ++b) {
    const uint64_t h = BlockPool::chain_hash(prev, tokens.data() + b * bs, bs);
    const int blk = pool.lookup(h, tokens.data() + b * bs);
    if (blk < 0) break;
    pool.retain(blk);
    t.blocks.push_back(blk);
    st.hashes.push_back(h);
    prev = h;
  }
  st.n_tokens = static_cast<int>(t.blocks.size()) * bs;
  return st.n_tokens;
}

void KVCache::clear(int seq) {
  if (seq < 0) {
    for (int s = 0; s < cfg_.n_seq; ++s) clear(s);
    return;
  }
  check_seq(seq, "clear");
  SeqState& st = seqs_[seq];
  for (size_t g = 0; g < groups_.size(); ++g) drop_blocks_from(static_cast<int>(g), st.tables[g], 0);
  st = SeqState{};
  st.tables.resize(groups_.size());
}

// Logical block `logical` of t about to be written: a shared block is replaced by a private
// copy of its first n_slots slots, an unshared one leaves the prefix cache.
void KVCache::make_private(int g, Table& t, int64_t logical, int n_slots) {
  BlockPool& pool = *groups_[g].pool;
  const int blk = t.blocks[logical];
  if (blk < 0) return;
  if (pool.ref_count(blk) == 1) {
    pool.unpublish(blk);
    return;
  }
  const int copy = pool.allocate();
  if (copy < 0)
    fail(ErrorKind::OutOfMemory, "KV block pool exhausted: no block to copy shared block {} into", blk);
  const int bs = cfg_.block_size;
  pool.copy_slots(static_cast<int64_t>(blk) * bs, static_cast<int64_t>(copy) * bs, n_slots);
  pool.release(blk);
  t.blocks[logical] = copy;
}

void KVCache::drop_blocks_from(int g, Table& t, int64_t logical) {
  for (int64_t b = std::max(logical, t.first); b < static_cast<int64_t>(t.blocks.size()); ++b)
    if (t.blocks[b] >= 0) groups_[g].pool->release(t.blocks[b]);
  if (logical < static_cast<int64_t>(t.blocks.size())) t.blocks.resize(logical);
  if (t.first > static_cast<int64_t>(t.blocks.size())) t.first = static_cast<int64_t>(t.blocks.size());
  if (t.blocks.empty()) t.first = 0;
}

void KVCache::truncate_hashes(SeqState& st, int64_t full_blocks) {
  if (static_cast<int64_t>(st.hashes.size()) > full_blocks) st.hashes.resize(full_blocks);
}

void KVCache::rollback(int seq, int n) {
  check_seq(seq, "rollback");
  SeqState& st = seqs_[seq];
  if (n < 0 || n > st.n_tokens)
    fail(ErrorKind::InvalidArgument, "KV rollback of {} tokens: sequence {} holds {}", n, seq, st.n_tokens);
  if (n == 0) return;
  const int keep = st.n_tokens - n;
  const int bs = cfg_.block_size;
  // The next query (ordinal `keep`) must still find its whole window behind it.
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int w = groups_[g].window;
    const int64_t needed_from = std::max(0, keep - w + 1);
    if (w > 0 && keep > 0 && st.tables[g].first * bs > needed_from)
      fail(ErrorKind::InvalidArgument,
           "KV rollback of {} tokens on sequence {}: its window-{} layers gave back the tokens before position {}, "
           "position {} needs them from {} on",
           n, seq, w, st.tables[g].first * bs, keep, needed_from);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    Table& t = st.tables[g];
    drop_blocks_from(static_cast<int>(g), t, ceil_div(keep, bs));
    if (keep % bs == 0 || keep / bs < t.first) continue;
    make_private(static_cast<int>(g), t, keep / bs, keep % bs);
    BlockPool& pool = *groups_[g].pool;
    const size_t first = static_cast<size_t>(t.blocks[keep / bs]) * bs + keep % bs;
    std::fill_n(pool.pos() + first, bs - keep % bs, -1);
    std::fill_n(pool.tokens() + first, bs - keep % bs, -1);
  }
  truncate_hashes(st, keep / bs);
  st.n_tokens = keep;
}

void KVCache::shift(int seq, int n_keep, int n_discard, int head_dim, const RopeFor& rope_for) {
  check_seq(seq, "shift");
  SeqState& st = seqs_[seq];
  if (n_keep < 0 || n_discard <= 0 || n_keep + n_discard > st.n_tokens)
    fail(ErrorKind::InvalidArgument, "KV shift: keep {} + discard {} tokens of sequence {} holding {}", n_keep,
         n_discard, seq, st.n_tokens);
  for (size_t g = 0; g < groups_.size(); ++g) shift_group(static_cast<int>(g), st, n_keep, n_discard, head_dim, rope_for);
  st.n_tokens -= n_discard;
  st.publishable = false;  // later blocks hold tokens at positions their prompt would not give them
  truncate_hashes(st, n_keep / cfg_.block_size);
}

// Moves the held tokens after the discarded ones down by n_discard ordinals (in place, in
// increasing order: a destination is either discarded or already moved), taking blocks for
// destinations a sliding-window table had given back, then re-rotates the moved K rows.
void KVCache::shift_group(int g, SeqState& st, int n_keep, int n_discard, int head_dim, const RopeFor& rope_for) {
  Table& t = st.tables[g];
  BlockPool& pool = *groups_[g].pool;
  const int bs = cfg_.block_size;
  const int n = st.n_tokens, new_n = n - n_discard;
  for (int64_t b = std::max<int64_t>(t.first, n_keep / bs); b < static_cast<int64_t>(t.blocks.size()); ++b)
    make_private(g, t, b, bs);
  const int64_t src_begin = std::max<int64_t>(n_keep + n_discard, t.first * bs);
  const int64_t dst_begin = src_begin - n_discard;
  for (int64_t b = dst_begin / bs; b < t.first && dst_begin < new_n; ++b) {
    const int blk = pool.allocate();
    if (blk < 0) fail(ErrorKind::OutOfMemory, "KV block pool exhausted during a context shift of sequence {}", st.n_tokens);
    t.blocks[b] = blk;
  }
  if (dst_begin < new_n) t.first = std::min<int64_t>(t.first, dst_begin / bs);
  std::vector<int32_t> moved;
  for (int64_t o = src_begin; o < n; ++o) {
    const int64_t from = row_of(t, o), to = row_of(t, o - n_discard);
    pool.copy_slots(from, to, 1);
    pool.pos()[to] = static_cast<int32_t>(o - n_discard);
    moved.push_back(static_cast<int32_t>(to));
  }
  for (int64_t o = std::max<int64_t>(new_n, t.first * bs); o < n; ++o) {
    pool.pos()[row_of(t, o)] = -1;
    pool.tokens()[row_of(t, o)] = -1;
  }
  drop_blocks_from(g, t, ceil_div(new_n, bs));
  if (moved.empty()) return;
  for (size_t i = 0; i < groups_[g].layers.size(); ++i)
    backends_[groups_[g].layers[i]]->rerope_rows(cfg_.k_type, pool.k_data(static_cast<int>(i)), k_row_bytes_, cfg_.k_row,
                                                 static_cast<int64_t>(pool.n_blocks()) * bs, moved.data(),
                                                 static_cast<int64_t>(moved.size()), head_dim, -n_discard,
                                                 rope_for(groups_[g].layers[i]));
}

std::string KVCache::audit() const {
  const int bs = cfg_.block_size;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const BlockPool& pool = *groups_[g].pool;
    std::vector<int> refs(pool.n_blocks(), 0);
    for (int s = 0; s < cfg_.n_seq; ++s) {
      const SeqState& st = seqs_[s];
      const Table& t = st.tables[g];
      if (static_cast<int64_t>(t.blocks.size()) != ceil_div(st.n_tokens, bs))
        return fmt::format("group {} seq {}: {} blocks for {} tokens", g, s, t.blocks.size(), st.n_tokens);
      for (int64_t b = 0; b < static_cast<int64_t>(t.blocks.size()); ++b) {
        const int blk = t.blocks[b];
        if ((b < t.first) != (blk < 0))
          return fmt::format("group {} seq {}: logical block {} is {} (first held {})", g, s, b, blk, t.first);
        if (blk < 0) continue;
        if (blk >= pool.n_blocks()) return fmt::format("group {} seq {}: block {} out of range", g, s, blk);
        refs[blk] += 1;
        for (int j = 0; j < bs; ++j) {
          const int64_t o = b * bs + j;
          const int32_t want = o < st.n_tokens ? static_cast<int32_t>(o) : -1;
          const int32_t got = pool.pos()[static_cast<size_t>(blk) * bs + j];
          // A sliding-window table may hold holes behind the window after a shift.
          if (got != want && !(groups_[g].window > 0 && got == -1))
            return fmt::format("group {} seq {}: slot {} holds position {}, expected {}", g, s, o,
                               pool.pos()[static_cast<size_t>(blk) * bs + j], want);
        }
      }
    }
    int unowned = 0, cached = 0;
    for (int b = 0; b < pool.n_blocks(); ++b) {
      if (refs[b] != pool.ref_count(b))
        return fmt::format("group {} block {}: {} tables hold it, reference count {}", g, b, refs[b], pool.ref_count(b));
      if (refs[b] > 1 && !pool.published(b)) return fmt::format("group {} block {}: shared but not published", g, b);
      unowned += refs[b] == 0;
      cached += refs[b] == 0 && pool.published(b);
    }
    if (unowned != pool.n_available() || cached != pool.n_cached())
      return fmt::format("group {}: {} unowned ({} cached) blocks, pool counts {} available ({} cached)", g, unowned,
                         cached, pool.n_available(), pool.n_cached());
  }
  return {};
}

std::vector<int32_t> KVCache::held_tokens(int seq) const {
  check_seq(seq, "held_tokens");
  const SeqState& st = seqs_[seq];
  const Table& t = st.tables[0];
  std::vector<int32_t> out;
  for (int64_t o = t.first * cfg_.block_size; o < st.n_tokens; ++o) out.push_back(groups_[0].pool->tokens()[row_of(t, o)]);
  return out;
}

}  // namespace ember
