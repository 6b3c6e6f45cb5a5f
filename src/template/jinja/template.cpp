#include "template/jinja/template.h"

#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "util/error.h"

namespace ember::jinja {

Template Template::parse(std::string_view source) {
  Template t;
  try {
    t.body_ = std::make_shared<const Body>(parse_template(source));
  } catch (const Failure& e) {
    ember::fail(ErrorKind::InvalidArgument, "chat template {}", e.what());
  }
  return t;
}

Text Template::render(const Dict& variables, std::optional<std::time_t> now) const {
  Interpreter in(variables, now);
  try {
    return in.render(*body_);
  } catch (const Raised& e) {
    ember::fail(ErrorKind::InvalidArgument, "chat template line {}: raise_exception: {}", in.line(), e.what());
  } catch (const Failure& e) {
    ember::fail(ErrorKind::InvalidArgument, "chat template line {}:{}: {}", in.line(), in.col(), e.what());
  }
}

}  // namespace ember::jinja
