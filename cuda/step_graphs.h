// The CUDA backend's steps replayed as CUDA graphs (issue #19: host overhead of decode). A
// step's launches depend on its shape only (tokens, outputs, how they split into sequence
// runs) because everything that changes from step to step is device data at fixed
// addresses: tokens, positions, KV rows, block tables and their lengths (cuda_backend.cpp
// stages them; attention plans by table capacity, not length). So the second step of a
// shape is captured, and every later one is a single graph launch.
//
// Each op of a replayed step must match the op recorded at capture (same op, same buffers
// and sizes, as a signature): a difference means the shape did not determine the step, a
// bug, reported as an Internal error rather than a silently wrong replay. Graphs are
// dropped when device memory they may point to is reallocated (the memory generation).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/device_runtime.h"

namespace ember::cuda {

struct StepShape {
  int n_tokens = 0;
  int n_out = 0;
  std::vector<int> run_lengths;  // consecutive rows of one sequence
  bool operator==(const StepShape&) const = default;
};

class StepGraphs {
 public:
  StepGraphs(DeviceRuntime& rt, Stream s, bool enabled) : rt_(rt), stream_(s), enabled_(enabled) {}

  // After the step's inputs are uploaded: run directly, capture, or replay a graph.
  void begin(const StepShape& shape, uint64_t memory_generation);
  // Before each op of the step: true when the op must not be enqueued (a replay), after
  // checking its signature against the capture.
  bool skip(uint64_t signature);
  // Ends a capture and launches what was captured or replayed; then the step's work is
  // all enqueued.
  void end();
  // A step that failed half way: closes an open capture and forgets the step.
  void abandon();
  bool in_step() const { return mode_ != Mode::Idle; }
  bool direct() const { return mode_ == Mode::Idle || mode_ == Mode::Direct; }


 private:
  enum class Mode { Idle, Direct, Capture, Replay };
  struct Entry {
    StepShape shape;
    uint64_t generation = 0;
    std::vector<uint64_t> signatures;
    std::unique_ptr<DeviceGraph> graph;
  };
  static constexpr size_t kMaxGraphs = 16;  // shapes kept; the least recently used goes

  DeviceRuntime& rt_;
  Stream stream_;
  bool enabled_;
  Mode mode_ = Mode::Idle;
  std::vector<Entry> graphs_;      // most recently used last
  std::vector<StepShape> seen_;    // shapes run once: the next one of each is captured
  Entry current_;                  // the capture in progress
  size_t replay_at_ = 0;           // ops of the replay checked so far
  Entry* replaying_ = nullptr;
};

// Graphs captured and steps replayed by every backend of the process so far (tests, bench).
struct GraphCounts {
  int64_t captured = 0;
  int64_t replayed = 0;
};
GraphCounts graph_counts();

// A signature of an op from its arguments (pointers, sizes), folded one value at a time.
class Signature {
 public:
  explicit Signature(uint64_t op) : h_(0x9e3779b97f4a7c15ull ^ op) {}
  Signature& operator<<(uint64_t v) {
    h_ = (h_ ^ v) * 0x100000001b3ull;
    h_ ^= h_ >> 29;
    return *this;
  }
  Signature& operator<<(const void* p) { return *this << static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_;
};

}  // namespace ember::cuda
