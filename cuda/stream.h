// A CUDA stream as plain C++ sees it (cudaStream_t): work on one stream runs in order;
// nullptr is the default stream. The CPU execution's streams are tokens naming a queue
// that runs at once, or records while captured (cuda/cpu_exec/capture.h).
#pragma once

namespace ember::cuda {

using Stream = void*;

}  // namespace ember::cuda
