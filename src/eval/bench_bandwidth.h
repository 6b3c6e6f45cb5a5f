// The bandwidth `ember bench` holds decode against (eval::BenchOptions::read_bandwidth): the
// CPU's memory read bandwidth with the benchmark's threads (util/membw.h), or, when every
// layer runs on a CUDA device, that device's copy bandwidth (cuda/copy_probe.h: device to
// device, read + write counted as NVIDIA's bandwidthTest does). Either is read after each
// decode segment for as long as the segment took. The probe is made on first use and
// shared by every decode test of the run.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "util/membw.h"

namespace ember {
class ThreadPool;
namespace cuda {
class CopyProbe;
}
}  // namespace ember

namespace ember::eval {

class BenchBandwidth {
 public:
  // `device`: where the model's layers run (Cpu when any layer stays on the CPU).
  BenchBandwidth(DeviceKind device, ThreadPool& pool);
  BenchBandwidth(const BenchBandwidth&) = delete;
  BenchBandwidth& operator=(const BenchBandwidth&) = delete;
  ~BenchBandwidth();

  // Bytes/s of each read pattern over at least `seconds` (one pattern on a device).
  std::vector<double> read(double seconds);
  const std::string& name() const { return name_; }  // as the bench notes print it
  // The names of the patterns read() returns rates of, in its order (one on a device).
  std::vector<std::string> pattern_names() const;

 private:
  DeviceKind device_;
  ThreadPool& pool_;
  std::string name_;
  std::optional<BandwidthProbe> cpu_;
  std::unique_ptr<cuda::CopyProbe> copies_;
};

}  // namespace ember::eval
