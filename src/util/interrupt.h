// Ctrl-C as a request, not a kill: while an InterruptScope lives, SIGINT sets a flag that
// generation loops check between tokens (and between prefill chunks). A second Ctrl-C
// before the first was handled restores the default action and re-raises, so a stuck
// process can always be stopped.
#pragma once

namespace ember {

class InterruptScope {
 public:
  InterruptScope();   // installs the handler (without SA_RESTART: blocking reads return EINTR)
  ~InterruptScope();  // restores the previous handler
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

bool interrupt_requested();
void clear_interrupt();

}  // namespace ember
