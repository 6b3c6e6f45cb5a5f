#include "engine/stop_strings.h"

#include <algorithm>

namespace ember {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });  // "" would stop at once
}

std::string StopStringFilter::push(std::string_view piece) {
  if (stopped_) return {};
  pending_ += piece;
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  const size_t keep = held_back();
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopStringFilter::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  pending_.clear();
  return out;
}

size_t StopStringFilter::held_back() const {
  size_t keep = 0;
  for (const std::string& s : stops_) {
    // Stop strings are short (see completion_request.h), so trying each length is cheap.
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n) {
      if (std::string_view(pending_).substr(pending_.size() - n) == std::string_view(s).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}

std::string GeneratedText::finish() {
  std::string out = filter_.push(decoder_.flush());
  return out + filter_.flush();
}

}  // namespace ember
