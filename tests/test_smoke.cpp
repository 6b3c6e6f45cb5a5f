#include <doctest/doctest.h>

#include "util/error.h"

TEST_CASE("error kinds map to distinct exit codes") {
  CHECK(ember::exit_code_for(ember::ErrorKind::InvalidArgument) == 2);
  CHECK(ember::exit_code_for(ember::ErrorKind::Interrupted) == 130);
  CHECK_THROWS_AS(ember::fail(ember::ErrorKind::Format, "bad {}", 1), ember::Error);
}
