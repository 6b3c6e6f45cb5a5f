#include "util/error.h"

namespace ember {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return 2;
    case ErrorKind::Io: return 3;
    case ErrorKind::Format: return 4;
    case ErrorKind::Unsupported: return 5;
    case ErrorKind::OutOfMemory: return 6;
    case ErrorKind::ContextFull: return 7;
    case ErrorKind::Interrupted: return 130;
    case ErrorKind::Internal: return 70;
  }
  return 1;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Io: return "i/o error";
    case ErrorKind::Format: return "format error";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::OutOfMemory: return "out of memory";
    case ErrorKind::ContextFull: return "context full";
    case ErrorKind::Interrupted: return "interrupted";
    case ErrorKind::Internal: return "internal error";
  }
  return "error";
}

}  // namespace ember
