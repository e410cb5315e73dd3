// Ordering for |sort and dictsort (the reference's compareRuntimeValues):
// numbers and booleans compare numerically, strings by code unit (optionally
// lowercased), none with none and undefined with undefined; anything else,
// or two different kinds, is an error.

#include <algorithm>
#include <numeric>

#include "absl/status/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

bool NumericLike(const Value& v) { return v.is_number() || v.is(Type::kBool); }

// Kinds that compare with each other; 0 = not comparable at all.
int SortClass(const Value& v) {
  if (v.is(Type::kNone)) return 1;
  if (v.is(Type::kUndefined)) return 2;
  if (NumericLike(v)) return 3;
  if (v.is(Type::kString)) return 4;
  return 0;
}

absl::Status Incomparable(const Value& a, const Value& b) {
  return absl::InvalidArgumentError(Cat("cannot compare ", TypeName(a), " with ", TypeName(b)));
}

}  // namespace

absl::StatusOr<int> CompareValues(const Value& a, const Value& b, bool case_sensitive) {
  const int ca = SortClass(a);
  const int cb = SortClass(b);
  if (ca != cb || ca == 0) return Incomparable(a, b);
  if (ca == 3) return a.number() < b.number() ? -1 : (a.number() > b.number() ? 1 : 0);
  if (ca == 4) {
    const std::string x = case_sensitive ? a.string() : JsToLower(a.string());
    const std::string y = case_sensitive ? b.string() : JsToLower(b.string());
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return 0;
}

absl::StatusOr<std::vector<Value>> SortValues(const std::vector<Value>& items, const std::vector<Value>& keys,
                                              bool case_sensitive, bool reverse) {
  // A sort compares every pair that ends up adjacent, so the reference fails
  // exactly when two keys of different kinds (or an unordered kind) meet.
  for (size_t i = 1; i < keys.size(); ++i) {
    const int c0 = SortClass(keys[0]);
    if (SortClass(keys[i]) != c0 || c0 == 0) return Incomparable(keys[0], keys[i]);
  }
  std::vector<std::string> lowered;
  if (!case_sensitive && !keys.empty() && keys[0].is(Type::kString)) {
    for (const Value& key : keys) lowered.push_back(JsToLower(key.string()));
  }
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    int c;
    if (!lowered.empty()) {
      c = lowered[x] < lowered[y] ? -1 : (lowered[x] > lowered[y] ? 1 : 0);
    } else {
      c = CompareValues(keys[x], keys[y], /*case_sensitive=*/true).value_or(0);
    }
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t index : order) sorted.push_back(items[index]);
  return sorted;
}

}  // namespace warp::chat
