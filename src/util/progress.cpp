#include "util/progress.h"

#include <algorithm>
#include <cmath>
#include <unistd.h>

#include <fmt/format.h>

#include "util/terminal.h"

namespace ember {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(is_terminal(STDERR_FILENO)) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(const std::string& label, float fraction, int width) {
  fraction = std::clamp(std::isfinite(fraction) ? fraction : 0.0f, 0.0f, 1.0f);
  const int percent = static_cast<int>(fraction * 100.0f);
  const std::string tail = fmt::format("] {:3d}%", percent);
  const int bar = std::max(0, width - static_cast<int>(label.size()) - 2 - static_cast<int>(tail.size()));
  const int filled = static_cast<int>(std::lround(fraction * static_cast<float>(bar)));
  std::string out = label + " [";
  out.append(static_cast<size_t>(filled), '=');
  if (filled < bar) {
    out += '>';
    out.append(static_cast<size_t>(bar - filled - 1), ' ');
  }
  return out + tail;
}

void ProgressBar::update(float fraction) {
  if (!enabled_) return;
  if (fraction >= 1.0f) {  // done: make room for whatever the loader prints next
    finish();
    last_percent_ = 100;
    return;
  }
  const int percent = static_cast<int>(std::clamp(fraction, 0.0f, 1.0f) * 100.0f);
  if (percent == last_percent_) return;
  last_percent_ = percent;
  const int width = std::min(terminal_columns(STDERR_FILENO) - 1, 72);
  write_all(STDERR_FILENO, fmt::format("\r{}", render(label_, fraction, width)));
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  write_all(STDERR_FILENO, "\r\x1b[2K");  // erase: the loader prints its own summary line
  drawn_ = false;
}

}  // namespace ember
