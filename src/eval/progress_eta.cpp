#include "eval/progress_eta.h"

#include <cstdio>
#include <fmt/format.h>
#include <unistd.h>

namespace ember::eval {

ProgressEta::ProgressEta(std::string label, int total)
    : label_(std::move(label)), total_(total), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()) {}

std::string format_duration(double s) {
  if (s >= 3600) return fmt::format("{}h{:02d}m", int(s / 3600), int(s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", int(s / 60), int(s) % 60);
  return fmt::format("{:.1f}s", s);
}

void ProgressEta::step_done(int done) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = done > 0 ? elapsed / done : 0;
  const double eta = per_step * (total_ - done);
  const std::string text = fmt::format("{}: {}/{} done, {:.2f} s per chunk, ETA {}", label_, done, total_, per_step,
                                       format_duration(eta));
  if (tty_) {
    std::fprintf(stderr, "\r%s   ", text.c_str());
    printed_ = true;
  } else if (done == 1) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void ProgressEta::finish() {
  if (tty_ && printed_) std::fprintf(stderr, "\n");
  printed_ = false;
}

}  // namespace ember::eval
