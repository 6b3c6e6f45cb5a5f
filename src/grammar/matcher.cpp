#include "grammar/matcher.h"

#include "util/error.h"

namespace ember::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> g) : Matcher(std::make_shared<StateGraph>(std::move(g))) {}

Matcher::Matcher(std::shared_ptr<StateGraph> graph) : graph_(std::move(graph)), history_{StateGraph::start()} {}

bool Matcher::accept(std::string_view bytes) {
  const auto lock = graph_->lock();
  int32_t s = history_.back();
  for (char c : bytes) {
    s = graph_->next(s, static_cast<uint8_t>(c));
    if (s == StateGraph::kDead) return false;
  }
  history_.push_back(s);
  return true;
}

void Matcher::rollback(size_t n) {
  if (n > steps()) fail(ErrorKind::Internal, "grammar rollback of {} steps, {} taken", n, steps());
  history_.resize(history_.size() - n);
}

bool Matcher::can_end() const {
  const auto lock = graph_->lock();
  return graph_->accepted(history_.back());
}

bool Matcher::can_continue() const {
  const auto lock = graph_->lock();
  return graph_->alive(history_.back());
}

}  // namespace ember::grammar
