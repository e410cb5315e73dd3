#include "computed/model/engram/engram_hash.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "computed/model/engram/numpy_random.h"

namespace warp::computed {
namespace {

// Seeds are 10007 * layer id (vLLM: "a per-layer RNG so layers hash differently").
constexpr uint64_t kSeedPerLayer = 10007;
// Bounds that keep the arithmetic below exact; the release uses 4 and 8.
constexpr int32_t kMaxNgramSize = 16;
constexpr int32_t kMaxHeads = 1024;

uint64_t MulMod(uint64_t a, uint64_t b, uint64_t n) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % n);
}

uint64_t PowMod(uint64_t base, uint64_t exponent, uint64_t n) {
  uint64_t result = 1;
  for (base %= n; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result = MulMod(result, base, n);
    base = MulMod(base, base, n);
  }
  return result;
}

// Deterministic Miller-Rabin for every 64-bit n (the first 12 prime bases
// suffice below 3.3e24): exact, as transformers' sympy.isprime is. vLLM's own
// test (bases 2, 7, 61) is exact only below 2^32, which engram_vocab_size is.
bool IsPrime(uint64_t n) {
  constexpr std::array<uint64_t, 12> kBases = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return false;
  for (const uint64_t p : kBases) {
    if (n % p == 0) return n == p;
  }
  uint64_t d = n - 1;
  int r = 0;
  for (; d % 2 == 0; d /= 2) ++r;
  for (const uint64_t a : kBases) {
    uint64_t x = PowMod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int k = 1; k < r && composite; ++k) {
      x = MulMod(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

uint64_t NextPrimeAbove(uint64_t start) {
  uint64_t candidate = start + 1;
  while (!IsPrime(candidate)) ++candidate;
  return candidate;
}

absl::Status ValidateOptions(const EngramHashOptions& options) {
  auto out_of_range = [](const std::string& field, int64_t value, const std::string& range) {
    return absl::InvalidArgumentError(
        absl::StrCat("engram: ", field, " is ", value, ", expected ", range));
  };
  for (const int32_t layer : options.layer_ids) {
    if (layer < 0) return out_of_range("an entry of engram_layer_ids", layer, ">= 0");
  }
  if (options.vocab_size < 1 || options.vocab_size > std::numeric_limits<int32_t>::max()) {
    return out_of_range("engram_vocab_size", options.vocab_size, "in [1, 2^31)");
  }
  if (options.max_ngram_size < 2 || options.max_ngram_size > kMaxNgramSize) {
    return out_of_range("engram_max_ngram_size", options.max_ngram_size,
                        absl::StrCat("in [2, ", kMaxNgramSize, "]"));
  }
  if (options.num_heads < 1 || options.num_heads > kMaxHeads) {
    return out_of_range("engram_n_heads", options.num_heads,
                        absl::StrCat("in [1, ", kMaxHeads, "]"));
  }
  if (options.compressed_vocab_size < 1) {
    return out_of_range("engram_compressed_vocab_size", options.compressed_vocab_size, ">= 1");
  }
  if (options.pad_id < 0 || options.pad_id >= options.compressed_vocab_size) {
    return out_of_range("the compressed pad id", options.pad_id,
                        absl::StrCat("in [0, ", options.compressed_vocab_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EngramHash> EngramHash::Create(const EngramHashOptions& options) {
  if (absl::Status status = ValidateOptions(options); !status.ok()) return status;
  EngramHash hash;
  hash.layer_ids_ = options.layer_ids;
  hash.max_ngram_size_ = static_cast<size_t>(options.max_ngram_size);
  hash.num_columns_ = static_cast<size_t>(options.max_ngram_size - 1) * options.num_heads;
  hash.compressed_vocab_size_ = options.compressed_vocab_size;
  hash.pad_id_ = options.pad_id;

  // Odd and below INT64_MAX / compressed_vocab_size, so that id * multiplier
  // (and the XOR of such) stays below 2^63: int64 and uint64 arithmetic agree.
  const int64_t bound =
      std::max<int64_t>(1, std::numeric_limits<int64_t>::max() / options.compressed_vocab_size / 2);
  for (const int32_t layer : options.layer_ids) {
    NumpyPcg64 generator(kSeedPerLayer * static_cast<uint64_t>(layer));
    for (const int64_t value : NumpyIntegers(generator, 0, bound, hash.max_ngram_size_)) {
      hash.multipliers_.push_back(value * 2 + 1);
    }
  }

  // vLLM restarts each n-gram's search at engram_vocab_size - 1 and skips the
  // primes already taken; those are always the primes just above the start,
  // so one running cursor gives the same sequence.
  uint64_t cursor = static_cast<uint64_t>(options.vocab_size - 1);
  for (size_t layer_idx = 0; layer_idx < hash.num_layers(); ++layer_idx) {
    int64_t offset = 0;
    for (size_t column = 0; column < hash.num_columns_; ++column) {
      cursor = NextPrimeAbove(cursor);
      hash.primes_.push_back(static_cast<int64_t>(cursor));
      hash.offsets_.push_back(offset);
      offset += static_cast<int64_t>(cursor);
    }
  }
  return hash;
}

std::span<const int64_t> EngramHash::multipliers(size_t layer_idx) const {
  WARP_CHECK(layer_idx < num_layers());
  return std::span(multipliers_).subspan(layer_idx * max_ngram_size_, max_ngram_size_);
}

std::span<const int64_t> EngramHash::primes(size_t layer_idx) const {
  WARP_CHECK(layer_idx < num_layers());
  return std::span(primes_).subspan(layer_idx * num_columns_, num_columns_);
}

std::span<const int64_t> EngramHash::offsets(size_t layer_idx) const {
  WARP_CHECK(layer_idx < num_layers());
  return std::span(offsets_).subspan(layer_idx * num_columns_, num_columns_);
}

int64_t EngramHash::num_rows(size_t layer_idx) const {
  return offsets(layer_idx).back() + primes(layer_idx).back();
}

void EngramHash::HashPosition(std::span<const int32_t> ids, size_t position,
                              std::span<int64_t> rows) const {
  WARP_CHECK(position < ids.size());
  WARP_CHECK(rows.size() == rows_per_token());
  // The n-gram's compressed ids, newest first. Once a look-back leaves the
  // sequence or meets a dead position, it and everything older is the pad.
  std::array<uint64_t, kMaxNgramSize> tokens{};
  bool blocked = false;
  for (size_t shift = 0; shift < max_ngram_size_; ++shift) {
    const int32_t id = shift <= position ? ids[position - shift] : kEngramDeadId;
    WARP_CHECK(id == kEngramDeadId || (id >= 0 && id < compressed_vocab_size_));
    blocked = blocked || id == kEngramDeadId;
    tokens[shift] = static_cast<uint64_t>(blocked ? pad_id_ : id);
  }
  const size_t num_heads = num_columns_ / (max_ngram_size_ - 1);
  for (size_t layer_idx = 0; layer_idx < num_layers(); ++layer_idx) {
    const std::span<const int64_t> m = multipliers(layer_idx);
    const std::span<const int64_t> p = primes(layer_idx);
    const std::span<const int64_t> o = offsets(layer_idx);
    int64_t* out = rows.data() + layer_idx * num_columns_;
    // Below 2^63 (see Create): the % is the same as torch's and Triton's.
    uint64_t rolling = tokens[0] * static_cast<uint64_t>(m[0]);
    for (size_t n = 1; n < max_ngram_size_; ++n) {
      rolling ^= tokens[n] * static_cast<uint64_t>(m[n]);
      for (size_t head = 0; head < num_heads; ++head) {
        const size_t column = (n - 1) * num_heads + head;
        out[column] = static_cast<int64_t>(rolling % static_cast<uint64_t>(p[column])) + o[column];
      }
    }
  }
}

std::vector<int64_t> EngramHash::HashSequence(std::span<const int32_t> ids) const {
  std::vector<int64_t> rows(ids.size() * rows_per_token());
  for (size_t position = 0; position < ids.size(); ++position) {
    HashPosition(ids, position,
                 std::span(rows).subspan(position * rows_per_token(), rows_per_token()));
  }
  return rows;
}

}  // namespace warp::computed
