// What memory the machine can give a context (for the memory plan's refusal).
#pragma once
#include <cstddef>

namespace ember {

struct SystemMemory {
  size_t total = 0;      // MemTotal
  size_t available = 0;  // MemAvailable: what can be allocated without swapping
};

// Reads /proc/meminfo; zeros when unknown (then nothing is refused).
SystemMemory system_memory();

}  // namespace ember
