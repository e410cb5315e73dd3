#include "computed/model/engram/numpy_random.h"

#include <array>

#include "common/check.h"

namespace warp::computed {
namespace {

// SeedSequence's hash constants (numpy/random/bit_generator.pyx).
constexpr uint32_t kInitA = 0x43b0d7e5;
constexpr uint32_t kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd;
constexpr uint32_t kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd;
constexpr uint32_t kMixMultR = 0x4973f715;
constexpr int kXShift = 16;  // 4 bytes * 8 / 2
constexpr size_t kPoolSize = 4;

// PCG's 128-bit LCG multiplier (PCG_DEFAULT_MULTIPLIER_128).
constexpr unsigned __int128 kPcgMultiplier =
    (static_cast<unsigned __int128>(2549297995355413924ULL) << 64) + 4865540595714422341ULL;

uint32_t HashMix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  return value ^ (value >> kXShift);
}

uint32_t Mix(uint32_t x, uint32_t y) {
  const uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> kXShift);
}

// _coerce_to_uint32_array(int): lowest 32 bits first; 0 is one zero word.
std::vector<uint32_t> EntropyWords(uint64_t seed) {
  std::vector<uint32_t> words = {static_cast<uint32_t>(seed)};
  if (seed >> 32) words.push_back(static_cast<uint32_t>(seed >> 32));
  return words;
}

// SeedSequence.mix_entropy with an empty spawn key.
std::array<uint32_t, kPoolSize> MixEntropy(const std::vector<uint32_t>& entropy) {
  std::array<uint32_t, kPoolSize> pool{};
  uint32_t hash_const = kInitA;
  for (size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = HashMix(i < entropy.size() ? entropy[i] : 0, hash_const);
  }
  for (size_t src = 0; src < kPoolSize; ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = Mix(pool[dst], HashMix(pool[src], hash_const));
    }
  }
  for (size_t src = kPoolSize; src < entropy.size(); ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) {
      pool[dst] = Mix(pool[dst], HashMix(entropy[src], hash_const));
    }
  }
  return pool;
}

uint64_t RotateRight(uint64_t value, unsigned rotation) {
  return (value >> rotation) | (value << ((64 - rotation) & 63));
}

// Lemire's bounded draw on 32-bit halves (buffered_bounded_lemire_uint32).
// REQUIRES: rng < 0xFFFFFFFF (rng + 1 must not wrap).
uint32_t BoundedLemire32(NumpyPcg64& generator, uint32_t rng) {
  const uint32_t rng_excl = rng + 1;
  uint64_t m = static_cast<uint64_t>(generator.NextUint32()) * rng_excl;
  uint32_t leftover = static_cast<uint32_t>(m);
  if (leftover < rng_excl) {
    const uint32_t threshold = (UINT32_MAX - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<uint64_t>(generator.NextUint32()) * rng_excl;
      leftover = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

// Lemire's bounded draw on 64-bit draws (bounded_lemire_uint64, the __int128 form).
// REQUIRES: rng < UINT64_MAX.
uint64_t BoundedLemire64(NumpyPcg64& generator, uint64_t rng) {
  const uint64_t rng_excl = rng + 1;
  unsigned __int128 m = static_cast<unsigned __int128>(generator.NextUint64()) * rng_excl;
  uint64_t leftover = static_cast<uint64_t>(m);
  if (leftover < rng_excl) {
    const uint64_t threshold = (UINT64_MAX - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<unsigned __int128>(generator.NextUint64()) * rng_excl;
      leftover = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// One value of random_bounded_uint64_fill(off, rng, use_masked=false), before
// adding off.
uint64_t BoundedDraw(NumpyPcg64& generator, uint64_t rng) {
  if (rng == 0) return 0;
  if (rng <= 0xFFFFFFFFULL) {
    // Lemire32 cannot take rng = 0xFFFFFFFF (rng + 1 wraps): numpy draws raw.
    if (rng == 0xFFFFFFFFULL) return generator.NextUint32();
    return BoundedLemire32(generator, static_cast<uint32_t>(rng));
  }
  if (rng == UINT64_MAX) return generator.NextUint64();
  return BoundedLemire64(generator, rng);
}

}  // namespace

std::vector<uint64_t> NumpySeedSequenceState(uint64_t seed, size_t num_words) {
  const std::array<uint32_t, kPoolSize> pool = MixEntropy(EntropyWords(seed));
  uint32_t hash_const = kInitB;
  std::vector<uint64_t> state(num_words, 0);
  for (size_t k = 0; k < 2 * num_words; ++k) {
    uint32_t value = pool[k % kPoolSize];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    // uint32 words viewed as little-endian uint64: the even word is the low half.
    state[k / 2] |= static_cast<uint64_t>(value) << (32 * (k % 2));
  }
  return state;
}

NumpyPcg64::NumpyPcg64(uint64_t seed) {
  const std::vector<uint64_t> words = NumpySeedSequenceState(seed, 4);
  const unsigned __int128 init_state = (static_cast<unsigned __int128>(words[0]) << 64) | words[1];
  const unsigned __int128 init_sequence =
      (static_cast<unsigned __int128>(words[2]) << 64) | words[3];
  // pcg_setseq_128_srandom_r
  increment_ = (init_sequence << 1) | 1;
  state_ = 0;
  Step();
  state_ += init_state;
  Step();
}

void NumpyPcg64::Step() { state_ = state_ * kPcgMultiplier + increment_; }

uint64_t NumpyPcg64::NextUint64() {
  Step();
  const uint64_t folded = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  return RotateRight(folded, static_cast<unsigned>(state_ >> 122));
}

uint32_t NumpyPcg64::NextUint32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uint32_;
  }
  const uint64_t next = NextUint64();
  has_uint32_ = true;
  uint32_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

std::vector<int64_t> NumpyIntegers(NumpyPcg64& generator, int64_t low, int64_t high, size_t count) {
  WARP_CHECK(low < high);
  // numpy draws on the closed interval [low, high - 1] as off + [0, rng].
  const uint64_t off = static_cast<uint64_t>(low);
  const uint64_t rng = static_cast<uint64_t>(high - 1) - off;
  std::vector<int64_t> values(count);
  for (int64_t& value : values) {
    value = static_cast<int64_t>(off + BoundedDraw(generator, rng));
  }
  return values;
}

}  // namespace warp::computed
