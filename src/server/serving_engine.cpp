#include "server/serving_engine.h"

#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "kv/kv_cache.h"
#include "model/model.h"
#include "util/error.h"

namespace ember::server {

ServingEngine::ServingEngine(Context& ctx, const Tokenizer& tok, const EngineOptions& options, ServerMetrics& metrics)
    : ctx_(ctx), tok_(tok), opts_(options), metrics_(metrics), sched_(make_scheduler()), limits_(sched_->limits()) {
  const int slots = opts_.scheduler.max_sequences > 0 ? opts_.scheduler.max_sequences : ctx.options().n_seq;
  capacity_ = slots + opts_.max_queue;
  publish();
  thread_ = std::thread([this] { loop(); });
}

std::unique_ptr<Scheduler> ServingEngine::make_scheduler() {
  Scheduler::Events events;
  events.on_token = [this](int id, int32_t) { on_token(id); };
  events.on_text = [this](int id, std::string_view text) { on_text(id, text); };
  events.on_finish = [this](int id, const SequenceEnd& end) { on_finish(id, end); };
  events.on_logprobs = [this](int id, const TokenLogprobs& lp) {
    Active& a = active_.at(id);
    a.have_logprobs = true;
    a.logprobs = lp;
  };
  SchedulerOptions options = opts_.scheduler;
  options.tokenizer = &tok_;
  return std::make_unique<Scheduler>(ctx_, options, std::move(events));
}

ServingEngine::~ServingEngine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ServingEngine::Admission ServingEngine::submit(SequenceRequest request, std::shared_ptr<ResponseStream> stream,
                                               Clock::time_point arrival) {
  {
    std::lock_guard lock(mu_);
    if (!accepting_) return Admission::ShuttingDown;
    if (queued_submits_ + snapshot_.waiting + snapshot_.running >= capacity_) return Admission::QueueFull;
    inbox_.push_back(Command{false, std::move(request), std::move(stream), arrival});
    queued_submits_ += 1;
    idle_now_ = false;
  }
  wake_.notify_all();
  return Admission::Queued;
}

void ServingEngine::cancel(const std::shared_ptr<ResponseStream>& stream) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(Command{true, {}, stream, {}});
  }
  wake_.notify_all();
}

void ServingEngine::shut_down(bool finish_running) {
  std::unique_lock lock(mu_);
  accepting_ = false;
  cancel_all_ = !finish_running;
  wake_.notify_all();
  idle_.wait(lock, [&] { return idle_now_; });
}

EngineSnapshot ServingEngine::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void ServingEngine::loop() {
  for (;;) {
    std::vector<Command> commands;
    bool cancel_all = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || cancel_all_ || !inbox_.empty() || !sched_->idle(); });
      if (stopping_) break;
      commands.swap(inbox_);
      queued_submits_ = 0;
      cancel_all = std::exchange(cancel_all_, false);
    }
    for (Command& c : commands) apply(c);
    if (cancel_all)
      for (const auto& [id, a] : active_) sched_->cancel(id);
    try {
      sched_->step();
    } catch (const std::exception& e) {  // a broken step must not leave clients waiting forever
      fmt::print(stderr, "serve: a decode step failed: {}; ending its requests\n", e.what());
      end_all("error");
    }
    publish();
  }
  end_all("cancelled");
}

void ServingEngine::apply(Command& c) {
  if (c.cancel) {
    if (auto it = id_of_.find(c.stream.get()); it != id_of_.end()) sched_->cancel(it->second);
    return;
  }
  try {
    c.request.draft = opts_.draft;
    const int id = sched_->submit(std::move(c.request));
    id_of_[c.stream.get()] = id;
    active_.emplace(id, Active{c.stream, c.arrival, c.arrival});
  } catch (const Error& e) {  // checked before it was queued: only a bug lands here
    fmt::print(stderr, "serve: a request was refused after it was queued: {}\n", e.what());
    c.stream->finish("error");
  }
}

void ServingEngine::on_token(int id) {
  Active& a = active_.at(id);
  const Clock::time_point now = Clock::now();
  const double since = std::chrono::duration<double>(now - (a.tokens == 0 ? a.arrival : a.last)).count();
  if (a.tokens == 0) metrics_.observe_ttft(since);
  else metrics_.observe_itl(since);
  a.last = now;
  a.tokens += 1;
  a.new_token = true;
}

// A token's text (it follows on_token), or what was held back, just before on_finish.
void ServingEngine::on_text(int id, std::string_view text) {
  Active& a = active_.at(id);
  if (!a.new_token && text.empty()) return;
  a.stream->deliver(text, a.have_logprobs && a.new_token ? &a.logprobs : nullptr, a.new_token);
  a.have_logprobs = a.new_token = false;
}

void ServingEngine::on_finish(int id, const SequenceEnd& end) {
  auto it = active_.find(id);
  Active& a = it->second;
  a.stream->finish(finish_reason_name(end.reason), end.prompt_cached);
  id_of_.erase(a.stream.get());
  active_.erase(it);
}

void ServingEngine::end_all(const char* reason) {
  for (auto& [id, a] : active_) a.stream->finish(reason);
  active_.clear();
  id_of_.clear();
  sched_ = make_scheduler();  // the old one frees every sequence's blocks
}

void ServingEngine::publish() {
  EngineSnapshot s;
  s.running = static_cast<int>(sched_->n_running());
  s.waiting = static_cast<int>(sched_->n_waiting());
  s.kv = ctx_.kv_cache().stats();
  s.kv_block_size = ctx_.kv_cache().block_size();
  s.scheduler = sched_->stats();
  bool idle = false;
  {
    std::lock_guard lock(mu_);
    snapshot_ = std::move(s);
    idle = idle_now_ = sched_->idle() && inbox_.empty();
  }
  if (idle) idle_.notify_all();
}

}  // namespace ember::server
