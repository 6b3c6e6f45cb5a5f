// A one-line progress bar on stderr while a model loads, drawn only when stderr is a
// terminal (logs and pipes stay clean). Redraws only when the shown percentage changes.
#pragma once
#include <string>

namespace ember {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // finishes the line if finish() was not called

  void update(float fraction);  // 0..1, clamped
  void finish();                // erases the bar
  bool enabled() const { return enabled_; }

  // The bar as text, `width` columns in all: "label [=====>    ]  42%".
  static std::string render(const std::string& label, float fraction, int width);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  int last_percent_ = -1;
};

}  // namespace ember
