// The compact KL-divergence base file (--kl-divergence-base).
//
// llama.cpp stores every scored position's full distribution as uint16 (2 bytes x n_vocab:
// 64 KB per position for a 32k vocabulary, ~3.2 GB for 100k tokens at -c 512, ~11 GiB for a
// wikitext-2 run). We store, per scored position, only what the statistics need:
//   - log p_base(target)        f32  exact PPL(base), delta-p, the ln PPL ratio
//   - log p_base(tail)          f32  mass outside the top K (summed in double)
//   - the top K tokens          K x {u32 id, f32 log p}, sorted by probability (ties: lower
//                               id first, as an argmax scan picks), so entry 0 is the top token
//   - S tail samples            S x {u32 id, f32 log p}: tokens drawn from the tail in
//                               proportion to p (systematic sampling, seeded by position)
// i.e. 8 + 8 (K + S) bytes per position. Defaults K = 32, S = 32: 520 bytes, so a
// 100k-token run at -c 512 (195 chunks x 255 scored positions = 49,725) takes 25.9 MB
// (+ 0.4 MB of tokens), 123x smaller than llama.cpp's file.
//
// KLD = sum_i p_i (log p_i - log q_i) splits exactly into the top K (computed exactly), the
// tail as one bucket, p_t log(p_t / q_t) (exact: q_t is summed from the new model's full
// row), and p_t KL(p|tail || q|tail), the divergence inside the tail, which the samples
// estimate without bias using a control variate (kld_stats.cpp): every sample contributes
// x - 1 - log x >= 0, so the noise is second order in how much the models differ. The mean
// KLD is unbiased; one position's value carries sampling noise that many positions average
// out. With K >= n_vocab nothing is sampled and the KLD is exact (--kl-divergence-top 0).
//
// Layout (little-endian): "EMBERKLD" u32 version=2, u32 n_ctx, u32 n_vocab, u32 n_chunk,
// u32 top_k, u32 add_bos, i32 bos, u32 tail_samples, then n_chunk*n_ctx u32 tokens, then
// n_chunk * (n_ctx - 1 - n_ctx/2) records in chunk order.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "eval/chunk_plan.h"
#include "eval/kld_base.h"
#include "util/mmap.h"

namespace ember::eval {

struct LogProbHeader {
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  uint32_t n_chunk = 0;
  uint32_t top_k = 0;     // entries per record (already clamped to n_vocab)
  uint32_t add_bos = 0;
  int32_t bos = -1;
  uint32_t tail_samples = 0;  // S (0 when the top K hold the whole vocabulary)
};

struct TopEntry {
  uint32_t id;
  float log_p;
};

// One scored position as stored (views into the mapped file or a writer's buffer).
struct LogProbRecord {
  float log_p_target = 0;
  float log_p_tail = 0;     // -inf when the top K hold all the mass
  std::span<const TopEntry> top;
  std::span<const TopEntry> tail;  // samples from the tail, drawn in proportion to p
};

size_t record_bytes(uint32_t top_k, uint32_t tail_samples);
// Bytes of a whole file for a plan (header + tokens + records).
uint64_t logprob_file_bytes(const ChunkPlan& plan, uint32_t top_k, uint32_t tail_samples);

// Builds the record of one base-model logits row predicting `target`.
// top_k 0 or >= n_vocab keeps the whole vocabulary (and then no tail samples).
class RecordBuilder {
 public:
  RecordBuilder(int n_vocab, uint32_t top_k, uint32_t tail_samples);
  // `position` seeds the tail sampling, so a base file is reproducible.
  LogProbRecord build(std::span<const float> logits, int32_t target, uint64_t position);
  uint32_t top_k() const { return top_k_; }
  uint32_t tail_samples() const { return tail_samples_; }

 private:
  uint32_t top_k_;
  uint32_t tail_samples_;
  std::vector<int32_t> order_;
  std::vector<TopEntry> top_;
  std::vector<TopEntry> tail_;
};

class LogProbWriter {
 public:
  // Writes the header and the evaluated tokens; throws Error(Io) naming the path.
  LogProbWriter(const std::string& path, const LogProbHeader& header, std::span<const int32_t> tokens);
  ~LogProbWriter();
  void append(const LogProbRecord& record);
  void close();  // flushes; throws Error(Io) on a short write

 private:
  void write(const void* data, size_t n);
  std::string path_;
  FILE* file_ = nullptr;
  uint32_t top_k_;
  uint32_t tail_samples_;
};

class LogProbReader final : public KldBase {
 public:
  // Maps and validates the file: magic, version, sizes consistent with the file length,
  // tokens below n_vocab. Throws Error(Io/Format) naming the path and the field.
  explicit LogProbReader(const std::string& path);
  const LogProbHeader& header() const override { return header_; }
  ChunkPlan plan() const override;
  std::span<const int32_t> tokens() const override { return tokens_; }
  int64_t n_records() const override { return n_records_; }
  LogProbRecord record(int64_t i) const override;  // i in [0, n_records)
  bool stores_bos() const override { return true; }
  std::string describe() const override;

  static bool has_magic(std::span<const uint8_t> bytes);

 private:
  MappedFile file_;
  LogProbHeader header_;
  std::vector<int32_t> tokens_;
  const uint8_t* records_ = nullptr;
  int64_t n_records_ = 0;
};

}  // namespace ember::eval
