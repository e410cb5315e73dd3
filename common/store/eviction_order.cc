#include "common/store/eviction_order.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/store/lfru_order.h"
#include "common/store/lru_order.h"

namespace warp {

std::unique_ptr<EvictionOrder> MakeEvictionOrder(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLfru:
      return std::make_unique<LfruOrder>();
    case EvictionPolicy::kLru:
      return std::make_unique<LruOrder>();
  }
  return std::make_unique<LfruOrder>();
}

absl::StatusOr<EvictionPolicy> ParseEvictionPolicy(std::string_view name) {
  if (name.empty() || name == "lfru") return EvictionPolicy::kLfru;
  if (name == "lru") return EvictionPolicy::kLru;
  return absl::InvalidArgumentError(
      absl::StrCat("cache policy '", std::string(name), "': expected lfru or lru"));
}

const char* EvictionPolicyName(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLfru:
      return "lfru";
    case EvictionPolicy::kLru:
      return "lru";
  }
  return "?";
}

}  // namespace warp
