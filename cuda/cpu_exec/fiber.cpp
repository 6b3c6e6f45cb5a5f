// _longjmp between stacks is what fibers do; glibc's fortified check would take a jump to
// another stack for one into a dead frame.
#undef _FORTIFY_SOURCE
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

// Announces a switch to `to` (fake_save null: the current context ends for good).
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
}

#if defined(EMBER_CPU_EXEC_ASAN)
void Fiber::resume(Context& from) {
  start_switch(&from.fake_stack, ctx_);
  swapcontext(&from.uc, &ctx_.uc);
  finish_switch(from, nullptr);
}

void Fiber::suspend(Context& to) {
  start_switch(&ctx_.fake_stack, to);
  swapcontext(&ctx_.uc, &to.uc);
  finish_switch(ctx_, nullptr);
}

void Fiber::finish(Context& to) {
  start_switch(nullptr, to);
  setcontext(&to.uc);
  std::abort();  // setcontext returns only when it fails
}
#else
void Fiber::resume(Context& from) {
  if (_setjmp(from.jb) != 0) return;  // back from suspend() or finish()
  if (fresh_) {
    fresh_ = false;
    setcontext(&ctx_.uc);
    std::abort();  // setcontext returns only when it fails
  }
  _longjmp(ctx_.jb, 1);
}

void Fiber::suspend(Context& to) {
  if (_setjmp(ctx_.jb) == 0) _longjmp(to.jb, 1);
}

void Fiber::finish(Context& to) { _longjmp(to.jb, 1); }
#endif

void Fiber::started(Context& from) {
  Context fresh;  // a new fiber has no fake stack yet
  finish_switch(fresh, &from);
}

}  // namespace ember::cpu_exec
