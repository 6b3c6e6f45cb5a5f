#include "util/interrupt.h"

#include <atomic>
#include <csignal>

namespace ember {

namespace {
std::atomic<int> g_pending{0};  // Ctrl-C presses not yet handled
struct sigaction g_previous {};

void on_sigint(int) {
  if (g_pending.fetch_add(1) >= 1) {
    // Second press while the first is still pending: give up gracefully-ness.
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}
static_assert(std::atomic<int>::is_always_lock_free, "the flag is touched from a signal handler");
}  // namespace

InterruptScope::InterruptScope() {
  g_pending = 0;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, &g_previous);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &g_previous, nullptr); }

bool interrupt_requested() { return g_pending.load() > 0; }
void clear_interrupt() { g_pending = 0; }

}  // namespace ember
