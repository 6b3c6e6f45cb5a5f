#include "eval/bench_bandwidth.h"

#include "cuda/copy_probe.h"
#include "cuda/device_select.h"

namespace ember::eval {

BenchBandwidth::BenchBandwidth(DeviceKind device, ThreadPool& pool) : device_(device), pool_(pool) {
  switch (device) {
    case DeviceKind::Cpu: name_ = "memory bandwidth"; break;
    case DeviceKind::Cuda: name_ = "device copy bandwidth (read + write)"; break;
    case DeviceKind::CudaOnCpu: name_ = "cpu_exec copy bandwidth (read + write)"; break;
  }
}

BenchBandwidth::~BenchBandwidth() = default;

std::vector<std::string> BenchBandwidth::pattern_names() const {
  if (device_ != DeviceKind::Cpu) return {name_};
  std::vector<std::string> names;
  for (const ReadPattern& p : kReadPatterns) names.emplace_back(p.name);
  return names;
}

std::vector<double> BenchBandwidth::read(double seconds) {
  if (device_ == DeviceKind::Cpu) {
    if (!cpu_) {
      cpu_.emplace(pool_);
      cpu_->pattern_passes();  // warm-up
    }
    return bytes_per_s(cpu_->gb_per_s_over(seconds));
  }
  if (!copies_) {
    cuda::DeviceRuntime& rt = cuda::device_runtime(device_);
    copies_ = std::make_unique<cuda::CopyProbe>(rt, cuda::copy_probe_bytes(rt));
  }
  return {copies_->gb_per_s_over(seconds) * 1e9};
}

}  // namespace ember::eval
