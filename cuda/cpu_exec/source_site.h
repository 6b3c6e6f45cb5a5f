// Where a barrier, collective or launch is written, taken implicitly as a defaulted argument
// (SourceSite::current() in a default argument names the caller's line). std::source_location
// would do, but clang 14 (Debian 12's, which builds `make fuzz`) has no
// __builtin_source_location for libstdc++'s <source_location>; __builtin_FILE and
// __builtin_LINE work in gcc and clang alike. There is no column (gcc lacks
// __builtin_COLUMN): two barriers on one line count as one site.
#pragma once

namespace ember::cpu_exec {

struct SourceSite {
  const char* file = "";
  unsigned line = 0;

  static constexpr SourceSite current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    return {file, line};
  }
};

}  // namespace ember::cpu_exec
