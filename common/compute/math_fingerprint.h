#pragma once

// MathFingerprint: the bits this build and its C library give the
// elementwise functions a routed expert computes (SiLU, clamped SiLU, SiTU,
// gpt-oss's clamped form: exp and tanh from libm), over a fixed set of
// inputs, hashed. The kernels give the same bits on every ISA by design
// (kernels_test); libm is the part of ExpertMath that may not, between
// machines. A client compares a daemon's (DescribeReply.math_fingerprint)
// with its own before it lets the daemon compute its experts.
//
// Thread-safe: a pure function.

#include <cstdint>

namespace warp {

uint64_t MathFingerprint();

}  // namespace warp
