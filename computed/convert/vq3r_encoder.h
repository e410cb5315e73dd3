#pragma once

// The converter's 3-bit residual vector quantizer (vq3r_b32, docs/FORMAT.md):
// a bounded sample of a matrix kind's vectors, the codebook k-means fits to
// it, and the encoder that maps rows to codes and scales with that codebook.
// Each 32-block of a row is divided by its RMS before it is sampled or
// encoded, so one codebook serves blocks of every magnitude; the stored scale
// is then refitted by least squares to the codes chosen.
//
// Thread-compatible: a Vq3rSample is one caller's; EncodeVq3rRows is pure
// (it splits the rows across its own threads).

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "common/format/codebooks.h"

namespace warp::computed {

class Vq3rSample {
 public:
  // Keeps at most `capacity` vectors (4 floats each): a uniform sample of all
  // those added, by reservoir sampling seeded with `seed`.
  Vq3rSample(uint64_t capacity, uint64_t seed);

  // Adds the normalized vectors of `rows` (a multiple of `cols` floats; cols % 32 == 0).
  void AddRows(std::span<const float> rows, uint64_t cols);

  uint64_t seen() const { return seen_; }
  // The sample: size() / 4 vectors.
  const std::vector<float>& vectors() const { return vectors_; }

  // Stage 0: k-means (k-means++ start, `iterations` Lloyd steps) on the
  // sample; stage 1: the same on what stage 0 leaves. Deterministic for a
  // given sample. REQUIRES: seen() > 0.
  Vq3rCodebook Train(int iterations = 16) const;

 private:
  uint64_t capacity_;
  uint64_t seen_ = 0;
  std::mt19937_64 rng_;
  std::vector<float> vectors_;
};

// Encodes rows of `cols` floats (cols % 32 == 0) as vq3r_b32: for each vector
// the nearest stage-0 centroid, then the nearest stage-1 centroid to the
// remainder, from the best of a few stage-0 candidates. `data` and `scale` are
// DataBytes and ScaleBytes of [rows, cols]. A block that is all zero, or not
// finite, stores scale 0 and codes 0.
void EncodeVq3rRows(const Vq3rCodebook& codebook, std::span<const float> rows, uint64_t cols,
                    std::span<std::byte> data, std::span<std::byte> scale);

}  // namespace warp::computed
