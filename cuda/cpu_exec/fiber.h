// A fiber: an execution context with its own stack, switched to and from explicitly. A
// fiber starts through glibc's ucontext (makecontext/setcontext); later switches save and
// restore registers with the compiler's __builtin_setjmp/__builtin_longjmp, which leave the
// signal mask alone, where swapcontext made two sigprocmask system calls per switch (~350
// ns; a third of the CPU execution's time). Starting costs those two calls too, so a fiber
// is started once and parks between jobs (park()). Under AddressSanitizer every switch
// stays a swapcontext. The CPU execution runs each GPU thread as one fiber.
// Stacks are mmap'd with a PROT_NONE guard page below them, so an overflow crashes at once
// instead of corrupting a neighbour. Under AddressSanitizer every switch is announced to it
// (__sanitizer_start/finish_switch_fiber), which keeps it from misreading fiber stacks.
#pragma once
#include <ucontext.h>

#include <cstddef>

namespace ember::cpu_exec {

// Where a switch lands: a ucontext plus the stack bounds AddressSanitizer wants to know.
struct Context {
  ucontext_t uc{};
  void* jb[5]{};  // __builtin_setjmp's buffer
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;  // AddressSanitizer's per-context bookkeeping
};

class Fiber {
 public:
  static constexpr size_t kStackBytes = size_t{256} << 10;

  Fiber();
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Makes the next resume() start entry() afresh. entry must never return (a returning
  // ucontext entry would bypass the sanitizer bookkeeping): it parks between jobs.
  void reset(void (*entry)());
  // From `from` (the scheduler), runs this fiber until it switches back.
  void resume(Context& from);
  // From inside this fiber: back to `to` (the scheduler); returns at the next resume().
  void suspend(Context& to);
  // From inside this fiber, between two jobs: back to `to`, like suspend(), but marked as
  // parked until the next resume(), so that its owner knows it may be resumed for new work
  // rather than started afresh.
  void park(Context& to);
  bool parked() const { return parked_; }
  // To call first thing in entry(): completes the switch into a fresh fiber and tells `from`
  // (the scheduler) its own stack bounds.
  static void started(Context& from);

 private:
  void* mapping_ = nullptr;
  Context ctx_;
  Context* resumer_ = nullptr;  // AddressSanitizer: told the bounds of the resuming stack
  bool fresh_ = true;  // reset() since the last resume(): start from ctx_.uc
  bool parked_ = false;
};

}  // namespace ember::cpu_exec
