// A small, fully specified pseudo-random generator for sampling. Same seed -> same stream on
// every platform and standard library (std::uniform_real_distribution's output is
// implementation-defined, so it is not used anywhere in sampling).
#pragma once
#include <cstdint>

namespace ember {

// SplitMix64 (Steele, Lea, Flood 2014): expands one 64-bit seed into well-mixed words.
uint64_t splitmix64_next(uint64_t& state);

// xoshiro256** 1.0 (Blackman & Vigna 2018), seeded by four SplitMix64 outputs of the seed.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  // A generator in an exact internal state (checks against the published test vectors).
  static Rng from_state(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
    Rng r;
    r.s_[0] = s0, r.s_[1] = s1, r.s_[2] = s2, r.s_[3] = s3;
    return r;
  }

  uint64_t next_u64();

  // Uniform double in [0, 1): the top 53 bits of next_u64() scaled by 2^-53. Every value
  // is exactly representable, so the conversion is identical everywhere.
  double uniform01();

 private:
  uint64_t s_[4];
};

// A seed from the operating system's entropy source, for runs without --seed.
uint64_t random_seed();

}  // namespace ember
