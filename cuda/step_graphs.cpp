#include "cuda/step_graphs.h"

#include <algorithm>
#include <atomic>

#include "util/error.h"

namespace ember::cuda {
namespace {

std::atomic<int64_t> g_captured{0}, g_replayed{0};

}  // namespace

GraphCounts graph_counts() { return GraphCounts{g_captured.load(), g_replayed.load()}; }

void StepGraphs::begin(const StepShape& shape, uint64_t memory_generation) {
  abandon();
  std::erase_if(graphs_, [&](const Entry& e) { return e.generation != memory_generation; });
  mode_ = Mode::Direct;
  if (!enabled_) return;
  auto hit = std::find_if(graphs_.begin(), graphs_.end(), [&](const Entry& e) { return e.shape == shape; });
  if (hit != graphs_.end()) {
    std::rotate(hit, hit + 1, graphs_.end());  // most recently used last
    replaying_ = &graphs_.back();
    replay_at_ = 0;
    mode_ = Mode::Replay;
    return;
  }
  if (std::find(seen_.begin(), seen_.end(), shape) == seen_.end()) {
    if (seen_.size() >= 4 * kMaxGraphs) seen_.erase(seen_.begin());
    seen_.push_back(shape);
    return;  // a first sight runs directly: one-off shapes (prompt chunks) never pay a capture
  }
  current_ = Entry{shape, memory_generation, {}, nullptr};
  rt_.begin_capture(stream_);
  mode_ = Mode::Capture;
}

bool StepGraphs::skip(uint64_t signature) {
  switch (mode_) {
    case Mode::Capture:
      current_.signatures.push_back(signature);
      return false;
    case Mode::Replay:
      if (replay_at_ >= replaying_->signatures.size() || replaying_->signatures[replay_at_] != signature)
        fail(ErrorKind::Internal, "cuda graph: op {} of a step of {} tokens differs from the captured one",
             replay_at_, replaying_->shape.n_tokens);
      ++replay_at_;
      return true;
    default:
      return false;
  }
}

void StepGraphs::end() {
  if (mode_ == Mode::Capture) {
    mode_ = Mode::Idle;
    current_.graph = rt_.end_capture(stream_);
    if (graphs_.size() >= kMaxGraphs) graphs_.erase(graphs_.begin());
    graphs_.push_back(std::move(current_));
    ++g_captured;
    graphs_.back().graph->launch(stream_);
  } else if (mode_ == Mode::Replay) {
    mode_ = Mode::Idle;
    if (replay_at_ != replaying_->signatures.size())
      fail(ErrorKind::Internal, "cuda graph: a step of {} tokens ran {} of the {} captured ops",
           replaying_->shape.n_tokens, replay_at_, replaying_->signatures.size());
    ++g_replayed;
    replaying_->graph->launch(stream_);
  }
  mode_ = Mode::Idle;
  replaying_ = nullptr;
}

void StepGraphs::abandon() {
  if (mode_ == Mode::Capture) {
    mode_ = Mode::Idle;
    try {
      rt_.end_capture(stream_);  // discarded; a capture the failure broke may not end cleanly
    } catch (const Error&) {
    }
  }
  mode_ = Mode::Idle;
  replaying_ = nullptr;
}

}  // namespace ember::cuda
