// A progress line with an ETA on stderr for long evaluations. On a terminal it rewrites one
// line ("\r"); into a log it prints a single line after the first step, as llama.cpp does, so
// captured output stays readable.
#pragma once
#include <chrono>
#include <string>

namespace ember::eval {

class ProgressEta {
 public:
  ProgressEta(std::string label, int total);
  void step_done(int done);  // `done` steps of `total` are finished
  void finish();             // ends the terminal line

 private:
  std::string label_;
  int total_;
  bool tty_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_;
};

// "1h02m", "3m05s", "12.3s"
std::string format_duration(double seconds);

}  // namespace ember::eval
