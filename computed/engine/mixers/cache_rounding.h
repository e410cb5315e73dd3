#pragma once

// The number-format round trips DeepSeek V4.1's modeling code puts into its
// attention (quantization-aware training: the model was trained with them,
// so transformers applies them even to unquantized weights; WARP follows it,
// docs/ENGINE.md#deepseek-v41). Each rounds `x` in blocks of `block`
// consecutive values onto a grid and back, in place; a length that is not a
// multiple of `block` is left as it is (as transformers leaves it).
//
// Thread-safe: pure functions.

#include <cstdint>
#include <span>

namespace warp::computed {

// FP8 E4M3 with a power-of-two (UE8M0) scale per block: the window's K = V
// rows (block 32).
void RoundTripFp8(std::span<float> x, uint32_t block);
// FP4 E2M1 with an E4M3 scale per block: the compressed KV entries (block 16).
void RoundTripFp4E4m3Scale(std::span<float> x, uint32_t block);
// FP4 E2M1 with a power-of-two (UE8M0) scale per block: the indexer's
// queries and keys (block 32).
void RoundTripFp4Pow2Scale(std::span<float> x, uint32_t block);

// Exposed for tests: E4M3 (finite, max 448) nearest to `x`, ties to even;
// 2^ceil(log2(x)) for x > 0; the E2M1 value transformers' codes give `x`
// (|x| <= 6).
float RoundToE4m3(float x);
float Pow2Ceil(float x);
float RoundToE2m1(float x);

}  // namespace warp::computed
