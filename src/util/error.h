// Typed errors with context. Code inside the engine throws ember::Error; the CLI maps the
// kind to an exit code and prints the message as one line (src/cli/errors.cpp).
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace ember {

enum class ErrorKind {
  InvalidArgument,  // a flag, value or request that cannot be honoured
  Io,               // a file cannot be opened, read, written or mapped
  Format,           // a file's content is malformed (GGUF, checkpoint, tokenizer ...)
  Unsupported,      // well-formed but not implemented (architecture, tensor type ...)
  OutOfMemory,      // a memory plan that does not fit
  ContextFull,      // a sequence longer than the context allows
  Interrupted,      // Ctrl-C
  Internal,         // a broken invariant: a bug in ember
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

template <class... Args>
[[noreturn]] void fail(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(kind, fmt::format(format, std::forward<Args>(args)...));
}

// Process exit code for an error kind (documented in README).
int exit_code_for(ErrorKind kind);
const char* error_kind_name(ErrorKind kind);

}  // namespace ember
