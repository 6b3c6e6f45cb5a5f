#include "cuda/cpu_exec/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "util/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_CPU_EXEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_CPU_EXEC_ASAN 1
#endif
#endif

#if defined(EMBER_CPU_EXEC_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace ember::cpu_exec {

namespace {

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Announces a switch to `to`; fake_save keeps the current context's fake stack.
[[maybe_unused]] void start_switch(void** fake_save, const Context& to) {
#if defined(EMBER_CPU_EXEC_ASAN)
  __sanitizer_start_switch_fiber(fake_save, to.stack_bottom, to.stack_size);
#else
  (void)fake_save, (void)to;
#endif
}

// Called on arrival in `self`; stores the bounds of the stack we came from in `from`, if given.
void finish_switch(Context& self, Context* from) {
#if defined(EMBER_CPU_EXEC_ASAN)
  const void* bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(self.fake_stack, &bottom, &size);
  if (from != nullptr) {
    from->stack_bottom = bottom;
    from->stack_size = size;
  }
#else
  (void)self, (void)from;
#endif
}

}  // namespace

Fiber::Fiber() {
  const size_t guard = page_bytes();
  mapping_ =
      mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping_ == MAP_FAILED)
    fail(ErrorKind::OutOfMemory, "cpu_exec: cannot map a {} KiB fiber stack", kStackBytes >> 10);
  mprotect(mapping_, guard, PROT_NONE);  // the stack grows down onto this page
  ctx_.stack_bottom = static_cast<char*>(mapping_) + guard;
  ctx_.stack_size = kStackBytes;
}

Fiber::~Fiber() { munmap(mapping_, kStackBytes + page_bytes()); }

void Fiber::reset(void (*entry)()) {
  getcontext(&ctx_.uc);
  ctx_.uc.uc_stack.ss_sp = const_cast<void*>(ctx_.stack_bottom);
  ctx_.uc.uc_stack.ss_size = ctx_.stack_size;
  ctx_.uc.uc_link = nullptr;
  ctx_.fake_stack = nullptr;
  makecontext(&ctx_.uc, entry, 0);
  fresh_ = true;
  parked_ = false;
}

void Fiber::park(Context& to) {
  parked_ = true;
  suspend(to);
  parked_ = false;
}

#if defined(EMBER_CPU_EXEC_ASAN)
void Fiber::resume(Context& from) {
  resumer_ = &from;
  start_switch(&from.fake_stack, ctx_);
  swapcontext(&from.uc, &ctx_.uc);
  finish_switch(from, nullptr);
}

void Fiber::suspend(Context& to) {
  start_switch(&ctx_.fake_stack, to);
  swapcontext(&ctx_.uc, &to.uc);
  finish_switch(ctx_, resumer_);  // the scheduler may differ from the one it left
}

#else
// GCC's and clang's own setjmp: the frame, stack pointer and landing address only (the
// compiler saves every other register around the call), where glibc's _longjmp also walks
// the pthread cleanup handlers (~10% of the CPU execution's time). The jump must come from
// a function other than the one that set the buffer. The functions that set one are noipa:
// GCC would otherwise see that their normal path clobbers few registers and let callers
// keep values in the others across the call, which a return by jump does not preserve.
[[gnu::noinline]] void jump_to(void** buf) { __builtin_longjmp(buf, 1); }

#if defined(__clang__)
#define EMBER_NO_IPA __attribute__((noinline))
#else
#define EMBER_NO_IPA __attribute__((noipa))
#endif

EMBER_NO_IPA void Fiber::resume(Context& from) {
  if (__builtin_setjmp(from.jb) != 0) return;  // back from suspend() or park()
  if (fresh_) {
    fresh_ = false;
    setcontext(&ctx_.uc);
    std::abort();  // setcontext returns only when it fails
  }
  jump_to(ctx_.jb);
}

EMBER_NO_IPA void Fiber::suspend(Context& to) {
  if (__builtin_setjmp(ctx_.jb) == 0) jump_to(to.jb);
}

#endif

void Fiber::started(Context& from) {
  Context fresh;  // a new fiber has no fake stack yet
  finish_switch(fresh, &from);
}

}  // namespace ember::cpu_exec
