#pragma once

// Program invariants: WARP_CHECK always aborts on failure, WARP_DCHECK only in
// debug builds. Environmental failures use absl::Status instead (STYLE.md).

#include <cstdio>
#include <cstdlib>

#define WARP_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: WARP_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

#ifdef NDEBUG
#define WARP_DCHECK(cond) \
  do {                    \
  } while (false && (cond))
#else
#define WARP_DCHECK(cond) WARP_CHECK(cond)
#endif
