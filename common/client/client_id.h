#pragma once

// The id a client of a shared daemon sends with its hints and cancels
// (PrefetchRequest.client, FastPathPrefetch.client): the daemon withdraws a
// cancel's hints of that client only. One per ExpertSource, whatever the
// connections it reads over.

#include "common/store/expert_source.h"

namespace warp {

// A random id, never kLocalClient (the anonymous id clients that send none share).
ClientId RandomClientId();

}  // namespace warp
