#include <fmt/format.h>

#include <cstdio>
#include <new>

#include "cli/commands.h"
#include "util/error.h"

namespace ember::cli {

namespace {
int g_exit_code = 0;
}

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

int guarded(const char* command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ember {}: {}\n", command, e.what());
    return exit_code_for(e.kind());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr, "ember {}: out of memory\n", command);
    return exit_code_for(ErrorKind::OutOfMemory);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ember {}: internal error: {}\n", command, e.what());
    return exit_code_for(ErrorKind::Internal);
  }
}

}  // namespace ember::cli
