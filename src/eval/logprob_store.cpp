#include "eval/logprob_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "eval/llamacpp_logits.h"
#include "sampling/log_softmax.h"
#include "util/error.h"

namespace ember::eval {

namespace {
constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'L', 'D'};
constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 8 + 8 * 4;

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace

size_t record_bytes(uint32_t top_k, uint32_t tail_samples) {
  return 8 + size_t(top_k + tail_samples) * sizeof(TopEntry);
}

uint64_t logprob_file_bytes(const ChunkPlan& plan, uint32_t top_k, uint32_t tail_samples) {
  return kHeaderBytes + uint64_t(plan.n_chunk) * plan.n_ctx * 4 +
         uint64_t(plan.scored_total()) * record_bytes(top_k, tail_samples);
}

RecordBuilder::RecordBuilder(int n_vocab, uint32_t top_k, uint32_t tail_samples)
    : top_k_(top_k == 0 ? uint32_t(n_vocab) : std::min<uint32_t>(top_k, uint32_t(n_vocab))),
      tail_samples_(top_k_ < uint32_t(n_vocab) ? tail_samples : 0),
      order_(size_t(n_vocab)), top_(top_k_), tail_(tail_samples_) {}

namespace {
// splitmix64: a well-mixed 64-bit hash, here of the position, for the sampling offset.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

LogProbRecord RecordBuilder::build(std::span<const float> logits, int32_t target, uint64_t position) {
  const LogSoftmaxRow row = log_softmax_row(logits);
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = int32_t(i);
  // Higher logit first; equal logits by lower id, so entry 0 is what an argmax scan finds.
  auto before = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (top_k_ < order_.size()) std::nth_element(order_.begin(), order_.begin() + top_k_, order_.end(), before);
  std::sort(order_.begin(), order_.begin() + top_k_, before);

  double tail = 0;  // summed from the small end up for accuracy
  for (size_t i = order_.size(); i-- > top_k_;) tail += std::exp(double(logits[order_[i]]) - row.log_norm);
  for (uint32_t k = 0; k < top_k_; ++k) {
    top_[k] = {uint32_t(order_[k]), float(log_prob(logits, row, order_[k]))};
  }
  // Systematic sampling of the tail: S evenly spaced points of its cumulative mass, shifted
  // by one offset u in [0, 1); each token is picked with probability proportional to p.
  if (tail_samples_ > 0) {
    const double u = double(mix64(position) >> 11) * 0x1.0p-53;
    double cum = 0;
    size_t i = top_k_;
    for (uint32_t s = 0; s < tail_samples_; ++s) {
      const double point = (double(s) + u) / double(tail_samples_) * tail;
      while (i + 1 < order_.size()) {
        const double p = std::exp(double(logits[order_[i]]) - row.log_norm);
        if (cum + p > point) break;
        cum += p;
        ++i;
      }
      tail_[s] = {uint32_t(order_[i]), float(log_prob(logits, row, order_[i]))};
    }
  }
  LogProbRecord rec;
  rec.log_p_target = float(log_prob(logits, row, target));
  rec.log_p_tail = tail > 0 ? float(std::log(tail)) : -std::numeric_limits<float>::infinity();
  rec.top = top_;
  rec.tail = tail_;
  return rec;
}

LogProbWriter::LogProbWriter(const std::string& path, const LogProbHeader& h, std::span<const int32_t> tokens)
    : path_(path), top_k_(h.top_k), tail_samples_(h.tail_samples) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) fail(ErrorKind::Io, "cannot open {} for writing: {}", path, std::strerror(errno));
  uint8_t head[kHeaderBytes];
  std::memcpy(head, kMagic, 8);
  const uint32_t fields[8] = {kVersion, h.n_ctx, h.n_vocab, h.n_chunk, h.top_k, h.add_bos, uint32_t(h.bos), h.tail_samples};
  for (int i = 0; i < 8; ++i) put_u32(head + 8 + 4 * i, fields[i]);
  write(head, sizeof head);
  if (tokens.size() != size_t(h.n_chunk) * h.n_ctx) {
    fail(ErrorKind::Internal, "{}: {} tokens for {} chunks of {}", path, tokens.size(), h.n_chunk, h.n_ctx);
  }
  std::vector<uint32_t> ids(tokens.begin(), tokens.end());
  write(ids.data(), ids.size() * 4);
}

LogProbWriter::~LogProbWriter() {
  if (file_) std::fclose(file_);
}

void LogProbWriter::write(const void* data, size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) fail(ErrorKind::Io, "short write to {}: {}", path_, std::strerror(errno));
}

void LogProbWriter::append(const LogProbRecord& r) {
  if (r.top.size() != top_k_ || r.tail.size() != tail_samples_) {
    fail(ErrorKind::Internal, "{}: record with {}+{} entries, header says {}+{}", path_, r.top.size(), r.tail.size(),
         top_k_, tail_samples_);
  }
  write(&r.log_p_target, 4);
  write(&r.log_p_tail, 4);
  write(r.top.data(), r.top.size_bytes());
  write(r.tail.data(), r.tail.size_bytes());
}

void LogProbWriter::close() {
  if (!file_) return;
  const bool ok = std::fflush(file_) == 0;
  std::fclose(file_);
  file_ = nullptr;
  if (!ok) fail(ErrorKind::Io, "cannot flush {}: {}", path_, std::strerror(errno));
}

LogProbReader::LogProbReader(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  if (bytes.size() < kHeaderBytes || !has_magic(bytes)) {
    fail(ErrorKind::Format, "{}: not an ember KL-divergence base file (magic \"EMBERKLD\" missing)", path);
  }
  const uint8_t* p = bytes.data() + 8;
  const uint32_t version = get_u32(p);
  if (version != kVersion) fail(ErrorKind::Format, "{}: version {} (this build reads {})", path, version, kVersion);
  header_.n_ctx = get_u32(p + 4);
  header_.n_vocab = get_u32(p + 8);
  header_.n_chunk = get_u32(p + 12);
  header_.top_k = get_u32(p + 16);
  header_.add_bos = get_u32(p + 20);
  header_.bos = int32_t(get_u32(p + 24));
  header_.tail_samples = get_u32(p + 28);
  const auto& h = header_;
  if (h.n_ctx < 4 || h.n_ctx > (1u << 24)) fail(ErrorKind::Format, "{}: n_ctx {} out of range", path, h.n_ctx);
  if (h.n_vocab == 0 || h.n_vocab > (1u << 24)) fail(ErrorKind::Format, "{}: n_vocab {} out of range", path, h.n_vocab);
  if (h.n_chunk == 0 || h.n_chunk > (1u << 24)) fail(ErrorKind::Format, "{}: n_chunk {} out of range", path, h.n_chunk);
  if (h.top_k == 0 || h.top_k > h.n_vocab) fail(ErrorKind::Format, "{}: top_k {} not in [1, n_vocab {}]", path, h.top_k, h.n_vocab);
  if (h.tail_samples > (1u << 16) || (h.top_k == h.n_vocab && h.tail_samples != 0)) {
    fail(ErrorKind::Format, "{}: tail_samples {} invalid for top_k {} of {}", path, h.tail_samples, h.top_k, h.n_vocab);
  }
  if (h.add_bos > 1 || (h.add_bos && (h.bos < 0 || uint32_t(h.bos) >= h.n_vocab))) {
    fail(ErrorKind::Format, "{}: add_bos {} with bos {} invalid", path, h.add_bos, h.bos);
  }
  const ChunkPlan pl = plan();
  const uint64_t expected = logprob_file_bytes(pl, h.top_k, h.tail_samples);
  if (bytes.size() != expected) {
    fail(ErrorKind::Format, "{}: file has {} bytes, header (n_ctx {}, n_chunk {}, top_k {}, tail_samples {}) implies {}",
         path, bytes.size(), h.n_ctx, h.n_chunk, h.top_k, h.tail_samples, expected);
  }
  const uint8_t* tok = bytes.data() + kHeaderBytes;
  tokens_.resize(size_t(h.n_chunk) * h.n_ctx);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const uint32_t t = get_u32(tok + 4 * i);
    if (t >= h.n_vocab) fail(ErrorKind::Format, "{}: token {} at index {} >= n_vocab {}", path, t, i, h.n_vocab);
    tokens_[i] = int32_t(t);
  }
  records_ = tok + 4 * tokens_.size();
  n_records_ = pl.scored_total();
}

ChunkPlan LogProbReader::plan() const {
  ChunkPlan pl;
  pl.n_ctx = int(header_.n_ctx);
  pl.n_chunk = int(header_.n_chunk);
  pl.first = pl.n_ctx / 2;
  return pl;
}

LogProbRecord LogProbReader::record(int64_t i) const {
  const uint8_t* p = records_ + size_t(i) * record_bytes(header_.top_k, header_.tail_samples);
  LogProbRecord r;
  std::memcpy(&r.log_p_target, p, 4);
  std::memcpy(&r.log_p_tail, p + 4, 4);
  // The records start at a multiple of 4 bytes in a page-aligned mapping.
  const auto* entries = reinterpret_cast<const TopEntry*>(p + 8);
  r.top = {entries, header_.top_k};
  r.tail = {entries + header_.top_k, header_.tail_samples};
  const uint32_t n_vocab = header_.n_vocab;
  for (const TopEntry& e : std::span(entries, header_.top_k + header_.tail_samples)) {
    if (e.id >= n_vocab) fail(ErrorKind::Format, "{}: record {} holds token {} >= n_vocab {}", file_.path(), i, e.id, n_vocab);
  }
  return r;
}

bool LogProbReader::has_magic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0;
}

std::string LogProbReader::describe() const {
  return fmt::format("ember base file, top {} + {} tail samples per position", header_.top_k, header_.tail_samples);
}

std::unique_ptr<KldBase> open_kld_base(const std::string& path) {
  const MappedFile probe(path);
  if (LlamaCppLogitsReader::has_magic(probe.bytes())) return std::make_unique<LlamaCppLogitsReader>(path);
  if (LogProbReader::has_magic(probe.bytes())) return std::make_unique<LogProbReader>(path);
  fail(ErrorKind::Format, "{}: not a KL-divergence base file (neither ember's \"EMBERKLD\" nor llama.cpp's \"_logits_\")", path);
}

}  // namespace ember::eval
