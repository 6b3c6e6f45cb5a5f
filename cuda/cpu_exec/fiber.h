// A fiber: an execution context with its own stack, switched to and from explicitly
// (glibc ucontext, about 350 ns a switch). The CPU execution runs each GPU thread as one.
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

  // Makes the next resume() start entry() afresh. entry must never return: a fiber ends by
  // calling finish() (a returning ucontext entry would bypass the sanitizer bookkeeping).
  void reset(void (*entry)());
  // From `from` (the scheduler), runs this fiber until it switches back.
  void resume(Context& from);
  // From inside this fiber: back to `to` (the scheduler); returns at the next resume().
  void suspend(Context& to);
  // From inside this fiber, once it is done: back to `to`, never to return.
  [[noreturn]] void finish(Context& to);
  // To call first thing in entry(): completes the switch into a fresh fiber and tells `from`
  // (the scheduler) its own stack bounds.
  static void started(Context& from);

 private:
  void* mapping_ = nullptr;
  Context ctx_;
};

}  // namespace ember::cpu_exec
