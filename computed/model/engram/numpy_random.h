#pragma once

// numpy.random's default generator, bit for bit, for the one use the engram
// has for it: `default_rng(seed).integers(low, high, size, dtype=np.int64)`
// draws DeepSeek V4.1's hash multipliers. Integer arithmetic only: the values
// exceed 2^53, so nothing here goes through a double.
//
// The pieces, as numpy 1.24 (and later) define them:
//   - SeedSequence(seed).generate_state(4, uint64): the seed as little-endian
//     32-bit words, hash-mixed into a pool of 4 words, drawn out as 8 words
//     and paired into 4 uint64 (numpy/random/bit_generator.pyx);
//   - PCG64 (XSL-RR 128/64) seeded with state = s[0]:s[1], inc = s[2]:s[3]
//     (numpy/random/src/pcg64/pcg64.{h,c});
//   - Generator.integers -> random_bounded_uint64_fill with use_masked=false:
//     Lemire's multiply-and-reject on 64-bit draws, or on buffered 32-bit
//     halves when the range fits 32 bits (numpy/random/src/distributions/
//     distributions.c). tests/reference/engram_vectors.py checks it against numpy.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warp::computed {

// numpy.random.PCG64 seeded from an integer through SeedSequence.
// Thread-compatible: one generator per caller.
class NumpyPcg64 {
 public:
  // PCG64(seed), i.e. the bit generator of numpy.random.default_rng(seed).
  explicit NumpyPcg64(uint64_t seed);

  uint64_t NextUint64();
  // numpy's next_uint32: the low half of a 64-bit draw, then its high half.
  uint32_t NextUint32();

  unsigned __int128 state() const { return state_; }
  unsigned __int128 increment() const { return increment_; }

 private:
  void Step();

  unsigned __int128 state_ = 0;
  unsigned __int128 increment_ = 0;  // always odd
  bool has_uint32_ = false;          // numpy's buffered high half
  uint32_t uint32_ = 0;
};

// SeedSequence(seed).generate_state(num_words, dtype=np.uint64).
std::vector<uint64_t> NumpySeedSequenceState(uint64_t seed, size_t num_words);

// Generator(PCG64).integers(low, high, size=count, dtype=np.int64), high
// exclusive. REQUIRES: low < high.
std::vector<int64_t> NumpyIntegers(NumpyPcg64& generator, int64_t low, int64_t high, size_t count);

}  // namespace warp::computed
