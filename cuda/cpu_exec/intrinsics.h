// CUDA's device math, bit, memory and atomic intrinsics for kernels compiled as plain C++
// (part of cuda_compat.h). The fast-math ones (__expf, __fdividef, rsqrtf ...) are the exact
// library functions here; the GPU's are a few ulp off, which NMSE tolerances absorb. Atomics
// go through std::atomic_ref: cooperative fibers never interleave inside one anyway, but this
// stays right if blocks ever run on several OS threads.
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "util/error.h"

// --- math ---
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __saturatef(float x) { return x >= 0.0f ? (x <= 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0, as on the GPU

inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
inline float max(float a, float b) { return std::fmax(a, b); }

// --- bits ---
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, x >>= 1) r = (r << 1) | (x & 1u);
  return r;
}
// Byte i of the result is byte (s >> 4i) & 7 of the eight bytes y:x (x the low four).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t bytes = (uint64_t{y} << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}

// c + the dot product of the four signed (unsigned) bytes of a and b.
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return c;
}

// --- memory ---
template <class T>
T __ldg(const T* p) {
  return *p;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
[[noreturn]] inline void __trap() { ember::fail(ember::ErrorKind::Internal, "cpu_exec: a kernel called __trap()"); }

// --- atomics: CUDA's overload sets, each returning the old value ---
namespace ember::cpu_exec {
template <class T>
concept AtomicInt = std::same_as<T, int> || std::same_as<T, unsigned> || std::same_as<T, unsigned long long> ||
    std::same_as<T, long long>;
template <class T>
concept AtomicNumber = AtomicInt<T> || std::same_as<T, float> || std::same_as<T, double>;

template <class T, class F>
T atomic_update(T* p, F f) {
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, f(old), std::memory_order_relaxed)) {
  }
  return old;
}
}  // namespace ember::cpu_exec

template <ember::cpu_exec::AtomicNumber T>
T atomicAdd(T* p, std::type_identity_t<T> v) {
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
}
template <ember::cpu_exec::AtomicInt T>
T atomicSub(T* p, std::type_identity_t<T> v) {
  return std::atomic_ref<T>(*p).fetch_sub(v, std::memory_order_relaxed);
}
template <ember::cpu_exec::AtomicNumber T>
T atomicExch(T* p, std::type_identity_t<T> v) {
  return std::atomic_ref<T>(*p).exchange(v, std::memory_order_relaxed);
}
template <ember::cpu_exec::AtomicInt T>
T atomicMax(T* p, std::type_identity_t<T> v) {
  return ember::cpu_exec::atomic_update(p, [v](T old) { return old > v ? old : v; });
}
template <ember::cpu_exec::AtomicInt T>
T atomicMin(T* p, std::type_identity_t<T> v) {
  return ember::cpu_exec::atomic_update(p, [v](T old) { return old < v ? old : v; });
}
template <ember::cpu_exec::AtomicInt T>
T atomicAnd(T* p, std::type_identity_t<T> v) {
  return std::atomic_ref<T>(*p).fetch_and(v, std::memory_order_relaxed);
}
template <ember::cpu_exec::AtomicInt T>
T atomicOr(T* p, std::type_identity_t<T> v) {
  return std::atomic_ref<T>(*p).fetch_or(v, std::memory_order_relaxed);
}
template <ember::cpu_exec::AtomicInt T>
T atomicCAS(T* p, std::type_identity_t<T> compare, std::type_identity_t<T> v) {
  std::atomic_ref<T>(*p).compare_exchange_strong(compare, v, std::memory_order_relaxed);
  return compare;  // the old value, whether or not it matched
}
