// A Jinja template as Hugging Face chat templates are written: the subset of jinja2 that real
// chat templates use, evaluated as transformers renders them (an immutable sandbox with
// trim_blocks, lstrip_blocks and loop controls; its tojson; raise_exception; strftime_now).
//
// Why an interpreter of our own: the dependency rules allow Debian packages and PyPI only, and
// Debian 12 packages no C++ Jinja engine (`apt-cache search jinja` lists only Python packages,
// jinja2 itself, its docs and an Emacs mode; there is no inja or Jinja2Cpp either), while
// minja and llama.cpp's common/jinja live inside other projects' sources and may not be copied
// into this tree. The subset is small (tests/test_jinja.cpp checks it against jinja2's own
// output, tools/check-templates renders real templates with both).
//
// Template text is data: it can read nothing but its variables, and its time, recursion,
// string sizes and output are bounded (template/jinja/error.h names the limits).
#pragma once
#include <ctime>
#include <memory>
#include <optional>
#include <string_view>

#include "template/jinja/ast.h"
#include "template/jinja/value.h"

namespace ember::jinja {

class Template {
 public:
  // Throws ember::Error(InvalidArgument) "chat template line L:C: <what>" on a syntax error.
  static Template parse(std::string_view source);

  // The output, with the byte ranges that came from data strings in `variables`. `now`: the
  // time strftime_now() sees (default: the clock). Throws ember::Error(InvalidArgument) with
  // one line: the template line and what went wrong, or what raise_exception() said.
  Text render(const Dict& variables, std::optional<std::time_t> now = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace ember::jinja
