// StopStringFilter against a plain reference: the text cut at the first piece after which a
// stop string occurs in it (at that stop string's start), for random texts, stop strings and
// ways of cutting the text into pieces; what is shown only grows, so nothing shown early
// may later turn out to belong to a stop string.
#include <doctest/doctest.h>

#include <random>

#include "engine/stop_strings.h"

using namespace ember;

namespace {

// The text cut at the earliest stop string in it; *stopped when there was one.
std::string cut(const std::string& text, const std::vector<std::string>& stops, bool* stopped) {
  size_t first = std::string::npos;
  for (const std::string& s : stops) first = std::min(first, text.find(s));
  *stopped = first != std::string::npos;
  return text.substr(0, first);
}

}  // namespace

TEST_CASE("a stop string split over pieces is never shown") {
  StopStringFilter f({"</end>"});
  CHECK(f.push("hello <") == "hello ");
  CHECK(f.push("/en") == "");
  CHECK(f.push("d> more") == "");
  CHECK(f.stopped());
  CHECK(f.flush() == "");
}

TEST_CASE("held-back text comes out when it cannot start a stop string any more") {
  StopStringFilter f({"ab"});
  CHECK(f.push("xa") == "x");
  CHECK(f.push("c") == "ac");
  CHECK(f.push("a") == "");
  CHECK(f.flush() == "a");
  CHECK(!f.stopped());
}

TEST_CASE("random texts and pieces agree with cutting the whole text") {
  std::mt19937 rng(7);
  const std::string alphabet = "abc ";
  auto word = [&](int lo, int hi) {
    std::string s(std::uniform_int_distribution<int>(lo, hi)(rng), ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) stops.push_back(word(1, 4));
    const std::string text = word(0, 40);
    StopStringFilter f(stops);
    std::string shown, want = text;
    bool stopped = false;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 5, text.size() - at);
      shown += f.push(std::string_view(text).substr(at, n));
      at += n;
      if (!stopped) want = cut(text.substr(0, at), stops, &stopped);
      if (!stopped) want = text;
    }
    shown += f.flush();
    CAPTURE(text);
    REQUIRE(shown == want);
    REQUIRE(f.stopped() == stopped);
  }
}
