// Tests of the test harness itself: a harness that cannot detect a fault proves nothing.
#include <doctest/doctest.h>

#include "backend_check.h"

using namespace ember;

TEST_CASE("nmse is sum (a-b)^2 / sum b^2 and fails on NaN") {
  std::vector<float> b{1.0f, 2.0f, 2.0f};
  std::vector<float> a{1.0f, 2.0f, 3.0f};
  CHECK(check::nmse(a, b) == doctest::Approx(1.0 / 9.0));
  CHECK(check::nmse(b, b) == 0.0);
  a[0] = NAN;
  CHECK(std::isinf(check::nmse(a, b)));
  CHECK(check::first_non_finite(a.data(), a.size()) == 0);
}

TEST_CASE("guarded buffer notices writes past either end") {
  check::GuardedBuffer buf(10);
  CHECK(buf.guards_intact());
  CHECK(reinterpret_cast<uintptr_t>(buf.data()) % 64 == 0);
  buf.data()[9] = 1;
  CHECK(buf.guards_intact());
  buf.data()[10] = 1;
  CHECK_FALSE(buf.guards_intact());
  check::GuardedBuffer before(10);
  before.data()[-1] = 0;
  CHECK_FALSE(before.guards_intact());
}

TEST_CASE("strided matrix keeps padding and round-trips dense data") {
  check::Rng rng(1);
  auto dense = rng.uniform(5 * 7);
  check::StridedF32 m(dense, 5, 7, 3);
  CHECK(m.stride() == 10);
  CHECK(m.dense() == dense);
  CHECK(m.guards_intact());
  m.row(2)[7] = 0.0f;  // a write into the gap between rows
  CHECK_FALSE(m.guards_intact());
}

TEST_CASE("seeded random fill is reproducible") {
  check::Rng a(7), b(7);
  CHECK(a.uniform(16) == b.uniform(16));
}
