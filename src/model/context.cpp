#include <algorithm>
#include <cstdio>

#include "kv/kv_cache.h"
#include "model/arch.h"
#include "model/layers.h"
#include "util/memory.h"
#include "model/model.h"
#include "util/error.h"

namespace ember {

struct Context::Scratch {
  StepBuffers host_buf, device_buf;  // activations on the CPU, on the device
  Step::LayerBackends layers;        // where each layer computes
  std::vector<int64_t> slots;      // KV ordinal of each token of the current ubatch
  std::vector<int32_t> out_rows;   // its rows whose logits are wanted
  std::vector<int32_t> pos;        // positions resolved for the current ubatch
  std::vector<int32_t> expected;   // per sequence: next position while validating a batch
  std::vector<int32_t> counts;     // per sequence: tokens of the batch / ubatch
  std::vector<LayerAttention> attention;  // the model's layers at this context's n_ctx
};

size_t kv_row_bytes(DType type, int64_t n) { return dtype_row_bytes(type, n); }

static double mib(size_t b) { return b / 1048576.0; }

static KVCacheConfig kv_config(const Model& model, const ContextOptions& o, int n_ctx, int n_ubatch) {
  const Hparams& hp = model.hparams();
  KVCacheConfig c;
  c.n_layer = hp.n_layer;
  c.n_seq = o.n_seq;
  c.n_ctx = n_ctx;
  c.n_ubatch = n_ubatch;
  c.k_row = hp.n_embd_k_gqa();
  c.v_row = hp.n_embd_v_gqa();
  c.k_type = o.k_type;
  c.v_type = o.v_type;
  c.n_blocks = o.kv_blocks;
  c.prefix_cache = o.prefix_cache;
  c.window.assign(hp.n_layer, 0);
  for (int il = 0; il < hp.n_layer; ++il) c.window[il] = model.arch().attention[il].window;
  return c;
}

Context::Context(const Model& model, const ContextOptions& opts, ThreadPool& pool)
    : model_(model), opts_(opts) {
  const Hparams& hp = model.hparams();
  n_ctx_ = opts.n_ctx > 0 ? opts.n_ctx : std::min(hp.n_ctx_train, 4096);
  if (opts.n_ctx < 0) fail(ErrorKind::InvalidArgument, "context size {} must be >= 0", opts.n_ctx);
  if (opts.n_batch <= 0 || opts.n_ubatch <= 0)
    fail(ErrorKind::InvalidArgument, "batch sizes must be positive (-b {}, -ub {})", opts.n_batch, opts.n_ubatch);
  if (opts.n_seq <= 0 || opts.n_seq > 1024) fail(ErrorKind::InvalidArgument, "n_seq {} out of range (1..1024)", opts.n_seq);
  if (opts.policy == ContextPolicy::Shift && (opts.n_keep < 0 || opts.n_keep >= n_ctx_ - 1))
    fail(ErrorKind::InvalidArgument, "n_keep {} must lie in [0, n_ctx - 1) = [0, {})", opts.n_keep, n_ctx_ - 1);
  opts_.n_ubatch = std::min(opts.n_ubatch, opts.n_batch);
  for (DType t : {opts.k_type, opts.v_type}) {
    if (!kv_type_known(t))
      fail(ErrorKind::InvalidArgument, "KV cache type {} unsupported (use {})", dtype_name(t), kv_type_names());
    // Quantized K/V blocks must not straddle heads: attention reads one head at a time.
    if (hp.head_dim % dtype_size(t).block_size != 0 || hp.head_dim_v % dtype_size(t).block_size != 0)
      fail(ErrorKind::InvalidArgument, "KV cache type {} needs a head size that is a multiple of {}, model has {}",
           dtype_name(t), dtype_size(t).block_size, hp.head_dim);
  }

  // The memory plan, checked before anything big is allocated.
  const Placement& pl = model.placement();
  if (pl.first_device_layer > 0) host_backend_ = make_backend(DeviceKind::Cpu, pool);
  if (pl.device != DeviceKind::Cpu) device_backend_ = make_backend(pl.device, pool);
  Backend& planned = device_backend_ ? *device_backend_ : *host_backend_;
  const bool on_host = !device_backend_;
  const KVCacheConfig kvc = kv_config(model, opts_, n_ctx_, opts_.n_ubatch);
  // Offloaded, the plan is the device's: its share of the weights and of the layers' KV.
  plan_.weight_bytes = on_host ? model.weight_bytes() : model.device_weight_bytes();
  plan_.kv_bytes = KVCache::bytes_for(kvc);
  if (!on_host) plan_.kv_bytes = plan_.kv_bytes / hp.n_layer * (pl.n_layer - pl.first_device_layer);
  plan_.scratch_bytes = StepBuffers::bytes_for(hp, opts_.n_ubatch) + static_cast<size_t>(hp.n_vocab) * sizeof(float) +
                        planned.scratch_bytes(opts_.n_ubatch, n_ctx_);
  const SystemMemory sys = on_host ? system_memory() : SystemMemory{0, planned.memory_available() + plan_.weight_bytes};
  plan_.available = opts.memory_limit ? opts.memory_limit : sys.available;
  const size_t bpt = static_cast<size_t>(hp.n_layer) * (dtype_row_bytes(opts.k_type, kvc.k_row) + dtype_row_bytes(opts.v_type, kvc.v_row));
  if (opts.print_plan)
    std::fprintf(stderr,
                 "memory plan (%s): weights %.1f MiB%s + KV cache %.1f MiB (K %s, V %s, %d ctx x %d seq in blocks of %d, "
                 "%.1f KiB/token) "
                 "+ scratch %.1f MiB (ubatch %d) = %.1f MiB of %.1f MiB available\n",
                 planned.describe().c_str(), mib(plan_.weight_bytes), on_host ? " (mmap)" : "", mib(plan_.kv_bytes),
                 dtype_name(opts.k_type), dtype_name(opts.v_type), n_ctx_,
                 opts.n_seq, kvc.block_size, bpt / 1024.0, mib(plan_.scratch_bytes), opts_.n_ubatch, mib(plan_.total()),
                 mib(plan_.available));
  // Mapped weights are file pages the kernel can evict, but a model that does not fit in
  // RAM thrashes at every token; KV and scratch are anonymous memory that must fit outright.
  const size_t anon = plan_.kv_bytes + plan_.scratch_bytes;
  const bool explicit_limit = opts.memory_limit != 0;
  const bool too_big = explicit_limit ? plan_.total() > plan_.available
                      : !on_host   ? sys.available && plan_.total() > sys.available
                                   : (sys.available && anon > sys.available) || (sys.total && plan_.total() > sys.total);
  if (too_big)
    fail(ErrorKind::OutOfMemory,
         "memory plan does not fit: weights {:.1f} MiB + KV cache {:.1f} MiB + scratch {:.1f} MiB = {:.1f} MiB, "
         "{:.1f} MiB available (try a smaller -c or a quantized -ctk/-ctv)",
         mib(plan_.weight_bytes), mib(plan_.kv_bytes), mib(plan_.scratch_bytes), mib(plan_.total()),
         mib(explicit_limit ? plan_.available : (anon > sys.available ? sys.available : sys.total)));

  scratch_ = std::make_unique<Scratch>();
  if (host_backend_) scratch_->host_buf.plan(*host_backend_, hp, opts_.n_ubatch);
  if (device_backend_) scratch_->device_buf.plan(*device_backend_, hp, opts_.n_ubatch);
  for (int il = 0; il < hp.n_layer; ++il) {
    const bool dev = pl.layer(il) != DeviceKind::Cpu;
    scratch_->layers.backends.push_back(dev ? device_backend_.get() : host_backend_.get());
    scratch_->layers.buffers.push_back(dev ? &scratch_->device_buf : &scratch_->host_buf);
  }
  const std::vector<Backend*>& backends = scratch_->layers.backends;
  kv_ = std::make_unique<KVCache>(kvc, std::vector<KVMemory*>(backends.begin(), backends.end()));
  scratch_->slots.assign(opts_.n_ubatch, 0);
  scratch_->out_rows.assign(opts_.n_ubatch, 0);
  scratch_->pos.assign(opts_.n_ubatch, 0);
  scratch_->expected.assign(opts.n_seq, 0);
  for (const LayerAttention& a : model.arch().attention) scratch_->attention.push_back(a.for_context(hp, n_ctx_));
  scratch_->counts.assign(opts.n_seq, 0);
  logits_.assign(hp.n_vocab, 0.0f);
}

Context::~Context() = default;

int Context::n_vocab() const { return model_.hparams().n_vocab; }
size_t Context::kv_bytes_per_token() const { return kv_->bytes_per_token(); }
int Context::kv_next_pos(int seq) const {
  if (seq < 0 || seq >= opts_.n_seq) fail(ErrorKind::InvalidArgument, "sequence {} out of range", seq);
  return kv_->next_pos(seq);
}
int Context::kv_n_tokens(int seq) const {
  if (seq < 0 || seq >= opts_.n_seq) fail(ErrorKind::InvalidArgument, "sequence {} out of range", seq);
  return kv_->n_tokens(seq);
}
void Context::kv_clear(int seq) { kv_->clear(seq); }
void Context::kv_rollback(int seq, int n_tokens) { kv_->rollback(seq, n_tokens); }
int Context::kv_attach_prefix(int seq, std::span<const int32_t> tokens) {
  if (seq < 0 || seq >= opts_.n_seq) fail(ErrorKind::InvalidArgument, "sequence {} out of range", seq);
  return kv_->attach_prefix(seq, tokens);
}

std::span<const float> Context::decode(const Batch& batch) {
  const Hparams& hp = model_.hparams();
  const size_t n = batch.tokens.size();
  if (batch.pos.size() != n || batch.seq.size() != n || batch.want_logits.size() != n)
    fail(ErrorKind::InvalidArgument, "batch arrays differ in length: {} tokens, {} positions, {} sequence ids, {} flags",
         n, batch.pos.size(), batch.seq.size(), batch.want_logits.size());
  if (n == 0) return {};
  if (n > static_cast<size_t>(opts_.n_batch))
    fail(ErrorKind::InvalidArgument, "batch of {} tokens exceeds n_batch {} (-b)", n, opts_.n_batch);

  // Validate everything before touching the cache, so a bad batch changes nothing.
  Scratch& sc = *scratch_;
  for (int s = 0; s < opts_.n_seq; ++s) {
    sc.expected[s] = kv_->next_pos(s);
    sc.counts[s] = 0;
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t tok = batch.tokens[i], s = batch.seq[i], p = batch.pos[i];
    if (tok < 0 || tok >= hp.n_vocab)
      fail(ErrorKind::InvalidArgument, "batch row {}: token {} outside the vocabulary (0..{})", i, tok, hp.n_vocab - 1);
    if (s < 0 || s >= opts_.n_seq)
      fail(ErrorKind::InvalidArgument, "batch row {}: sequence {} outside 0..{}", i, s, opts_.n_seq - 1);
    if (p != -1 && p != sc.expected[s])
      fail(ErrorKind::InvalidArgument,
           "batch row {}: sequence {} continues at position {}, batch gives {} (positions must be consecutive)", i, s,
           sc.expected[s], p);
    sc.expected[s] += 1;
    sc.counts[s] += 1;
  }
  for (int s = 0; s < opts_.n_seq; ++s) {
    const int held = kv_->n_tokens(s);
    if (held + sc.counts[s] <= n_ctx_) continue;
    if (opts_.policy == ContextPolicy::Error)
      fail(ErrorKind::ContextFull, "context full: sequence {} holds {} tokens, {} more exceed n_ctx {}", s, held,
           sc.counts[s], n_ctx_);
    if (opts_.n_keep + std::min(sc.counts[s], opts_.n_ubatch) > n_ctx_)
      fail(ErrorKind::ContextFull, "context full: n_keep {} + a chunk of {} tokens exceed n_ctx {}", opts_.n_keep,
           std::min(sc.counts[s], opts_.n_ubatch), n_ctx_);
  }
  if (opts_.policy == ContextPolicy::Error && !kv_->fits(sc.counts)) {
    int need = 0;
    for (int s = 0; s < opts_.n_seq; ++s) need += kv_->blocks_to_append(s, sc.counts[s]);
    const KVBlockStats st = kv_->global_stats();
    fail(ErrorKind::OutOfMemory, "KV block pool exhausted: the batch needs {} more blocks of {} tokens, {} of {} are free",
         need, kv_->block_size(), st.free + st.cached, st.total);
  }

  const size_t n_out = static_cast<size_t>(batch.n_outputs());
  if (logits_.size() < n_out * hp.n_vocab) logits_.resize(n_out * hp.n_vocab);  // grows once, then reused
  size_t out_done = 0;
  for (size_t b = 0; b < n; b += opts_.n_ubatch) {
    const size_t e = std::min(n, b + opts_.n_ubatch);
    run_ubatch(batch, b, e, logits_.data() + out_done * hp.n_vocab);
    for (size_t i = b; i < e; ++i) out_done += batch.want_logits[i] != 0;
  }
  return {logits_.data(), n_out * hp.n_vocab};
}

int Context::kv_shift(int seq) {
  const int n_discard = std::max(1, (kv_->n_tokens(seq) - opts_.n_keep) / 2);
  const Hparams& hp = model_.hparams();
  // A shift rotates by the position difference: the magnitude was applied once, at the store.
  kv_->shift(seq, opts_.n_keep, n_discard, hp.head_dim, [&](int il) {
    RopeParams p = rope_params(hp, scratch_->attention[il]);
    p.mscale = 1.0f;
    return p;
  });
  return n_discard;
}

int Context::shift_if_needed(int seq, int n_new) {
  int shifted = 0;
  while (kv_->n_tokens(seq) + n_new > n_ctx_) shifted += kv_shift(seq);
  return shifted;
}

void Context::run_ubatch(const Batch& batch, size_t begin, size_t end, float* logits_out) {
  Scratch& sc = *scratch_;
  const int n = static_cast<int>(end - begin);
  if (opts_.policy == ContextPolicy::Shift) {
    std::fill(sc.counts.begin(), sc.counts.end(), 0);
    for (size_t i = begin; i < end; ++i) sc.counts[batch.seq[i]] += 1;
    for (int s = 0; s < opts_.n_seq; ++s)
      if (sc.counts[s]) shift_if_needed(s, sc.counts[s]);
  }
  int n_out = 0;
  for (int t = 0; t < n; ++t) {
    const int s = batch.seq[begin + t];
    sc.pos[t] = kv_->next_pos(s);
    sc.slots[t] = kv_->append(s, sc.pos[t], batch.tokens[begin + t]).index;
    if (batch.want_logits[begin + t]) sc.out_rows[n_out++] = t;
  }
  StepInputs in;
  in.n_tokens = n;
  in.tokens = batch.tokens.data() + begin;
  in.pos = sc.pos.data();
  in.seq = batch.seq.data() + begin;
  in.slots = sc.slots.data();
  in.n_out = n_out;
  in.out_rows = sc.out_rows.data();
  const StepKV& step_kv = kv_->step_view({in.seq, static_cast<size_t>(n)}, {in.slots, static_cast<size_t>(n)});
  Step step(model_.hparams(), sc.attention, sc.layers, step_kv, in, logits_out);
  model_.arch().forward(step);
  step.finish();
  std::fill(sc.counts.begin(), sc.counts.end(), 0);
  for (size_t i = begin; i < end; ++i) sc.counts[batch.seq[i]] = 1;
  for (int s = 0; s < opts_.n_seq; ++s)
    if (sc.counts[s]) kv_->commit(s);
}

}  // namespace ember
