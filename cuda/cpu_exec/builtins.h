// CUDA's built-in variables and vector types for kernels compiled as plain C++ (part of
// cuda_compat.h). threadIdx and friends are thread_local variables that the scheduler
// (block.cpp) rewrites before it resumes a GPU thread's fiber: all fibers of a block run on
// the launching OS thread, so each fiber sees its own index while it runs.
#pragma once
#include <cstddef>
#include <cstdint>

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// The vector types kernels load and store through, with CUDA's sizes and alignments (the
// alignment is what makes a float4 load one 128-bit access on the GPU).
struct alignas(4) char4 {
  signed char x, y, z, w;
};
struct alignas(4) uchar4 {
  unsigned char x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

inline thread_local uint3 threadIdx{};
inline thread_local uint3 blockIdx{};
inline thread_local dim3 blockDim{};
inline thread_local dim3 gridDim{};
constexpr int warpSize = 32;

namespace ember::cpu_exec {

// The current block's dynamic shared memory (`extern __shared__`), set by the launcher.
inline thread_local std::byte* dynamic_shared_base = nullptr;

}  // namespace ember::cpu_exec
