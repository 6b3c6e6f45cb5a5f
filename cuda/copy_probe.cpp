#include "cuda/copy_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace ember::cuda {

size_t copy_probe_bytes(const DeviceRuntime& rt) {
  return rt.info().sm_count > 0 ? size_t{1} << 30 : size_t{64} << 20;
}

CopyProbe::CopyProbe(DeviceRuntime& rt, size_t bytes)
    : rt_(rt), stream_(rt.create_stream()), bytes_(bytes), src_(rt.allocate(bytes)), dst_(rt.allocate(bytes)) {
  seconds_for(1);  // warm-up: first touch of the pages, the copy engine's start
}

CopyProbe::~CopyProbe() {
  rt_.release(dst_);
  rt_.release(src_);
  rt_.destroy_stream(stream_);
}

double CopyProbe::seconds_for(int copies) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < copies; ++i) rt_.copy(dst_, src_, bytes_, stream_);
  rt_.synchronize(stream_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double CopyProbe::gb_per_s(int copies) {
  return 2.0 * static_cast<double>(bytes_) * copies / seconds_for(copies) / 1e9;
}

double CopyProbe::gb_per_s_over(double seconds) {
  // One copy sizes the rest: then runs of as many as the time left needs.
  double spent = seconds_for(1);
  double copies_done = 1;
  while (spent < seconds) {
    const double per_copy = spent / copies_done;
    const int run = static_cast<int>(std::clamp(std::ceil((seconds - spent) / per_copy), 1.0, 16384.0));
    spent += seconds_for(run);
    copies_done += run;
  }
  return 2.0 * static_cast<double>(bytes_) * copies_done / spent / 1e9;
}

}  // namespace ember::cuda
