#include "eval/llamacpp_logits.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "util/error.h"

namespace ember::eval {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr size_t kHeaderBytes = 8 + 3 * 4;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

bool LlamaCppLogitsReader::has_magic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0;
}

size_t LlamaCppLogitsReader::row_values() const { return 2 * ((size_t(header_.n_vocab) + 1) / 2) + 4; }

LlamaCppLogitsReader::LlamaCppLogitsReader(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  if (bytes.size() < kHeaderBytes || !has_magic(bytes))
    fail(ErrorKind::Format, "{}: not a llama.cpp KL-divergence base file (magic \"_logits_\" missing)", path);
  const uint32_t n_ctx = load<uint32_t>(bytes.data() + 8);
  const int32_t n_vocab = load<int32_t>(bytes.data() + 12);
  const int32_t n_chunk = load<int32_t>(bytes.data() + 16);
  if (n_ctx < 4 || n_ctx > (1u << 24)) fail(ErrorKind::Format, "{}: n_ctx {} out of range", path, n_ctx);
  if (n_vocab <= 0 || n_vocab > (1 << 24)) fail(ErrorKind::Format, "{}: n_vocab {} out of range", path, n_vocab);
  if (n_chunk <= 0 || n_chunk > (1 << 24)) fail(ErrorKind::Format, "{}: n_chunk {} out of range", path, n_chunk);
  header_.n_ctx = n_ctx;
  header_.n_vocab = uint32_t(n_vocab);
  header_.n_chunk = uint32_t(n_chunk);
  header_.top_k = uint32_t(n_vocab);
  const ChunkPlan pl = plan();
  const uint64_t n_tokens = uint64_t(n_ctx) * uint64_t(n_chunk);
  const uint64_t expected = kHeaderBytes + 4 * n_tokens + uint64_t(pl.scored_total()) * row_values() * 2;
  if (bytes.size() != expected)
    fail(ErrorKind::Format, "{}: file has {} bytes, header (n_ctx {}, n_vocab {}, n_chunk {}) implies {}", path,
         bytes.size(), n_ctx, n_vocab, n_chunk, expected);
  tokens_.resize(n_tokens);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const int32_t t = load<int32_t>(bytes.data() + kHeaderBytes + 4 * i);
    if (t < 0 || t >= n_vocab) fail(ErrorKind::Format, "{}: token {} at index {} outside [0, n_vocab {})", path, t, i, n_vocab);
    tokens_[i] = t;
  }
  rows_ = bytes.data() + kHeaderBytes + 4 * n_tokens;
  n_records_ = pl.scored_total();
}

int32_t LlamaCppLogitsReader::target_of(int64_t record) const {
  const ChunkPlan pl = plan();
  const int64_t chunk = record / pl.scored_per_chunk(), j = record % pl.scored_per_chunk();
  return tokens_[size_t(chunk * pl.n_ctx + pl.first + 1 + j)];
}

ChunkPlan LlamaCppLogitsReader::plan() const {
  ChunkPlan pl;
  pl.n_ctx = int(header_.n_ctx);
  pl.n_chunk = int(header_.n_chunk);
  pl.first = pl.n_ctx / 2;
  return pl;
}

LogProbRecord LlamaCppLogitsReader::record(int64_t i) const {
  const uint8_t* row = rows_ + size_t(i) * row_values() * 2;
  const float scale = load<float>(row);
  const float min_log_prob = load<float>(row + 4);
  if (!std::isfinite(scale) || !std::isfinite(min_log_prob) || scale < 0)
    fail(ErrorKind::Format, "{}: row {} has scale {} and minimum log-probability {}", file_.path(), i, scale, min_log_prob);
  const uint8_t* q = row + 8;
  const uint32_t n_vocab = header_.n_vocab;
  // A row whose logits were all equal (scale 0) keeps every token; otherwise q = 0 marks the floor.
  top_.clear();
  size_t best = 0;
  double mass = 0;
  for (uint32_t t = 0; t < n_vocab; ++t) {
    const uint16_t v = load<uint16_t>(q + 2 * size_t(t));
    if (v == 0 && scale != 0) continue;
    const float log_p = scale * float(v) + min_log_prob;
    if (top_.empty() || log_p > top_[best].log_p) best = top_.size();  // first maximum, as llama.cpp
    top_.push_back(TopEntry{t, log_p});
    mass += std::exp(double(log_p));
  }
  if (!top_.empty()) std::swap(top_[0], top_[best]);
  LogProbRecord r;
  r.log_p_target = scale * float(load<uint16_t>(q + 2 * size_t(target_of(i)))) + min_log_prob;
  const double tail = 1.0 - mass;
  r.log_p_tail = tail > 1e-12 ? float(std::log(tail)) : -std::numeric_limits<float>::infinity();
  r.top = top_;
  return r;
}

std::string LlamaCppLogitsReader::describe() const {
  return fmt::format("llama.cpp logits file, the whole {}-token distribution per position", header_.n_vocab);
}

}  // namespace ember::eval
