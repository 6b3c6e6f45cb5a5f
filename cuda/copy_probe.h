// The device's memory bandwidth as `ember bench` and `bench-ops` compare decode against it:
// device-to-device copies of one large buffer, timed by the wall clock around a run of
// copies and one stream synchronize (each copy moves a GiB, so launch latency is noise).
//
// Bytes are counted as NVIDIA's bandwidthTest counts a device-to-device copy: read + write,
// 2 x the buffer per copy. A decode step mostly reads, so this is the figure a read-bound
// kernel can approach (on an H200 about 4 TB/s of the 4.8 TB/s datasheet figure).
//
// On the CPU execution (cpu_exec) the "device" is host memory and the copies are memmoves:
// the numbers then say nothing about a GPU, but every line of the path runs.
#pragma once
#include <cstddef>

#include "cuda/device_runtime.h"

namespace ember::cuda {

// The buffer size to probe with: a GiB on a GPU, as bandwidthTest copies (far above the L2);
// 64 MiB on the CPU execution, above a last-level cache and quick to allocate.
size_t copy_probe_bytes(const DeviceRuntime& rt);

class CopyProbe {
 public:
  // Two device buffers of `bytes` (source and destination).
  CopyProbe(DeviceRuntime& rt, size_t bytes);
  ~CopyProbe();
  CopyProbe(const CopyProbe&) = delete;
  CopyProbe& operator=(const CopyProbe&) = delete;

  // GB/s (1e9 bytes, read + write) of `copies` back-to-back copies.
  double gb_per_s(int copies);
  // GB/s over runs of copies lasting at least `seconds` together (at least one copy), so a
  // reference taken beside a benchmark covers as much time as the benchmark did.
  double gb_per_s_over(double seconds);
  size_t bytes() const { return bytes_; }

 private:
  double seconds_for(int copies);

  DeviceRuntime& rt_;
  Stream stream_;
  size_t bytes_;
  void* src_;
  void* dst_;
};

}  // namespace ember::cuda
