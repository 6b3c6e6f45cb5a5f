#include "cuda/cpu_exec/capture.h"

#include <map>
#include <mutex>

#include "util/error.h"

namespace ember::cpu_exec {
namespace {

std::mutex g_mutex;
std::map<const void*, Graph>& open_captures() {
  static std::map<const void*, Graph> captures;
  return captures;
}

}  // namespace

void begin_capture(const void* stream) {
  std::lock_guard lock(g_mutex);
  if (!open_captures().try_emplace(stream).second)
    fail(ErrorKind::InvalidArgument, "cpu_exec: stream {} is already capturing", stream);
}

Graph end_capture(const void* stream) {
  std::lock_guard lock(g_mutex);
  auto it = open_captures().find(stream);
  if (it == open_captures().end()) fail(ErrorKind::InvalidArgument, "cpu_exec: stream {} is not capturing", stream);
  Graph g = std::move(it->second);
  open_captures().erase(it);
  return g;
}

Graph* capturing(const void* stream) {
  std::lock_guard lock(g_mutex);
  auto it = open_captures().find(stream);
  return it == open_captures().end() ? nullptr : &it->second;
}

}  // namespace ember::cpu_exec
