#include "util/memory.h"

#include <cstdio>
#include <cstring>

namespace ember {

SystemMemory system_memory() {
  SystemMemory m;
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemTotal: %llu kB", &kib) == 1) m.total = kib * 1024;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) m.available = kib * 1024;
  }
  std::fclose(f);
  return m;
}

}  // namespace ember
