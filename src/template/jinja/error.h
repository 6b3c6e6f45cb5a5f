// How the interpreter reports a problem. Inside it a Failure carries only the message; the
// renderer adds the template line (and column) of the node being evaluated once, at the top,
// and turns it into one ember::Error line.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace ember::jinja {

// Named limits: template text is data from a model file or a request, so every resource a
// template can spend is bounded.
inline constexpr size_t kMaxTemplateBytes = 1 << 20;       // template source
inline constexpr size_t kMaxOutputBytes = 16 << 20;        // the rendered prompt
inline constexpr size_t kMaxStringBytes = 16 << 20;        // any one string value
inline constexpr size_t kMaxListItems = 1 << 17;           // any one list (range(), list * n ...)
inline constexpr uint64_t kMaxSteps = 5'000'000;           // evaluated nodes and loop iterations
inline constexpr int kMaxCallDepth = 100;                  // nested macro calls
inline constexpr int kMaxNesting = 200;                    // parser nesting (expressions, blocks)

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A template's own raise_exception(): reported as the template's words, not as a bug in it.
struct Raised : Failure {
  using Failure::Failure;
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Failure(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ember::jinja
