// What the host code may ask of the CUDA backend. When ember is built without CUDA these
// calls report "not built" instead of failing to link.
#pragma once
#include <string>

namespace ember::cuda {

bool built();              // compiled with the CUDA backend
int device_count();        // 0 when not built or no device/driver is present
std::string device_name(int device);

}  // namespace ember::cuda
