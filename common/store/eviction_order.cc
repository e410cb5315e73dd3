#include "common/store/eviction_order.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/store/arc_order.h"
#include "common/store/duel_order.h"
#include "common/store/lfru_order.h"
#include "common/store/lru_order.h"

namespace warp {

std::unique_ptr<EvictionOrder> MakeEvictionOrder(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLfru:
      return std::make_unique<LfruOrder>();
    case EvictionPolicy::kLru:
      return std::make_unique<LruOrder>();
    case EvictionPolicy::kArc:
      return std::make_unique<ArcOrder>();
    case EvictionPolicy::kDuel:
      return std::make_unique<DuelOrder>();
  }
  return std::make_unique<LfruOrder>();
}

absl::StatusOr<EvictionPolicy> ParseEvictionPolicy(std::string_view name) {
  if (name.empty()) return kDefaultEvictionPolicy;
  if (name == "lfru") return EvictionPolicy::kLfru;
  if (name == "lru") return EvictionPolicy::kLru;
  if (name == "arc") return EvictionPolicy::kArc;
  if (name == "duel") return EvictionPolicy::kDuel;
  return absl::InvalidArgumentError(
      absl::StrCat("cache policy '", std::string(name), "': expected lfru, lru, arc or duel"));
}

const char* EvictionPolicyName(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLfru:
      return "lfru";
    case EvictionPolicy::kLru:
      return "lru";
    case EvictionPolicy::kArc:
      return "arc";
    case EvictionPolicy::kDuel:
      return "duel";
  }
  return "?";
}

}  // namespace warp
