// What chat requests need of a loaded model (engine/completion_request.h's ChatSetup):
// its template, and how its replies write tool calls and reasoning, read from the
// template text in its GGUF.
#pragma once
#include "engine/completion_request.h"
#include "gguf/gguf.h"

namespace ember::cli {

ChatSetup chat_setup(const gguf::File& f, const ChatTemplate& tmpl);

}  // namespace ember::cli
