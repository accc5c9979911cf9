// A small, fast, portable pseudo-random generator for the spot simulator: SplitMix64
// (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014; the
// constants are those of Vigna's reference splitmix64.c). Same seed, same sequence on every
// platform and standard library (std::*_distribution output is not portable). A value type:
// one per thread or per trial, not shared.
#pragma once

#include <cmath>
#include <cstdint>

namespace fulcrum::spot {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Exponentially distributed with the given mean (inverse transform; 1 - u is in (0, 1]).
  double Exponential(double mean) { return -mean * std::log(1.0 - Uniform()); }

 private:
  uint64_t state_;
};

// A per-trial seed that depends only on (seed, trial), so results do not depend on how trials
// are split between threads.
inline uint64_t TrialSeed(uint64_t seed, uint64_t trial) {
  SplitMix64 mix(seed ^ (trial * 0xD1B54A32D192ED03ULL));
  mix.Next();
  return mix.Next();
}

}  // namespace fulcrum::spot
