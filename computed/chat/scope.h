#pragma once

// A variable scope of the interpreter. Scopes chain to their parent; `set`
// writes the innermost one (so a {% set %} inside a for loop does not leak,
// which is why templates use namespace()). Shared because macros and call
// blocks keep the scope they run in.
//
// Thread-compatible: one render's scopes are used by one thread.

#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "computed/chat/value.h"

namespace warp::chat {

class Scope;
using ScopePtr = std::shared_ptr<Scope>;

class Scope {
 public:
  explicit Scope(ScopePtr parent = nullptr) : parent_(std::move(parent)) {}

  // The innermost binding of `name`, or undefined.
  Value Lookup(std::string_view name) const;
  bool HasLocal(std::string_view name) const { return vars_.contains(absl::string_view(name.data(), name.size())); }
  void Set(std::string name, Value value) { vars_[std::move(name)] = std::move(value); }

 private:
  ScopePtr parent_;
  absl::flat_hash_map<std::string, Value> vars_;
};

inline Value Scope::Lookup(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
    auto it = scope->vars_.find(absl::string_view(name.data(), name.size()));
    if (it != scope->vars_.end()) return it->second;
  }
  return Value();
}

}  // namespace warp::chat
