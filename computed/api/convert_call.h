#pragma once

// warp_convert: `computed convert` for an embedding program, its options
// checked and named as the C struct's fields.
//
// Thread-safe: each call converts on its calling thread, sharing nothing.

#include "absl/status/status.h"
#include "computed/api/warp.h"

namespace warp::api {

// `options` has been widened to the library's struct size.
absl::Status Convert(const warp_convert_options& options);

}  // namespace warp::api
