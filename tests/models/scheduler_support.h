// What the scheduler tests share (test_scheduler.cpp, test_scheduler_draft.cpp): requests,
// prompts, a request decoded alone for reference, and a driver of random traffic.
#pragma once
#include <functional>
#include <map>
#include <random>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "models/model_support.h"

namespace ember::test {

inline SequenceRequest request(std::vector<int32_t> prompt, int max_tokens, float temperature, uint64_t seed) {
  SequenceRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  return r;
}

inline std::vector<int32_t> prompt_of(int n, int salt, const std::vector<int32_t>& prefix = {}) {
  std::vector<int32_t> p = prefix;
  for (int i = 0; i < n; ++i) p.push_back((i * 7 + salt * 13 + 3) % 50 + 1);
  return p;
}

// The request on its own, without the scheduler: prefill in one batch, then one token per
// decode() call, sampled by its own chain.
inline std::vector<int32_t> alone(const Model& model, const SequenceRequest& r, int threads = 2) {
  ThreadPool pool(threads);
  Context ctx(model, options(1), pool);
  SamplerChain chain(r.sampling, ctx.n_ctx());
  for (int32_t t : r.prompt) chain.accept(t);
  std::vector<float> logits = run_batch(ctx, r.prompt, 0, r.prompt.size());
  std::vector<int32_t> out;
  std::span<const float> last(logits.data() + (r.prompt.size() - 1) * ctx.n_vocab(), ctx.n_vocab());
  std::vector<float> step;
  while (static_cast<int>(out.size()) < r.max_tokens) {
    const int32_t t = chain.sample(last);
    out.push_back(t);
    step = run_batch(ctx, {t}, 0, 1);
    last = std::span<const float>(step.data(), step.size());
  }
  return out;
}

// Random traffic for a scheduler: each step, an arrival one time in three (1-90 prompt
// tokens, half of them after a shared 64-token system prompt; 1-30 tokens out, greedy or
// sampled), a cancellation one time in eleven, then a step and `after_step` (the caller's
// audits). `drafting(r, i, rng)` may give the i-th request speculative drafting.
class RandomTraffic {
 public:
  using Drafting = std::function<void(SequenceRequest& r, int index, std::mt19937& rng)>;

  Scheduler::Events events() {
    return Scheduler::Events{nullptr, [this](int id, const SequenceEnd&) {
                               finished_[id] += 1;
                               std::erase(live_, id);
                             }};
  }
  void run(Scheduler& sched, int steps, const Drafting& drafting, const std::function<void(int)>& after_step) {
    std::mt19937 rng(5);
    const std::vector<int32_t> system = prompt_of(64, 7);
    for (int step = 0; step < steps; ++step) {
      if (rng() % 3 == 0) {
        const int n = 1 + static_cast<int>(rng() % 90);
        SequenceRequest r =
            request(prompt_of(n, static_cast<int>(rng() % 5), rng() % 2 ? system : std::vector<int32_t>{}),
                    1 + static_cast<int>(rng() % 30), (rng() % 2) ? 0.0f : 0.9f, rng());
        if (drafting) drafting(r, submitted_, rng);
        live_.push_back(sched.submit(std::move(r)));
        ++submitted_;
      }
      if (!live_.empty() && rng() % 11 == 0) sched.cancel(live_[rng() % live_.size()]);
      sched.step();
      after_step(step);
    }
    sched.run();
  }
  // Every request submitted finished exactly once.
  bool each_finished_once() const {
    if (static_cast<int>(finished_.size()) != submitted_) return false;
    for (const auto& [id, n] : finished_)
      if (n != 1) return false;
    return true;
  }

 private:
  std::map<int, int> finished_;
  std::vector<int> live_;
  int submitted_ = 0;
};

}  // namespace ember::test
