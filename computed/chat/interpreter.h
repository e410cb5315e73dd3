#pragma once

// Tree-walking evaluator of a parsed template, a port of @huggingface/jinja's
// Interpreter so output matches it byte for byte. Split over interpreter.cc
// (statements), evaluate.cc (expressions) and filters.cc (filters).
//
// Reference behaviours kept on purpose (they differ from Python Jinja):
//   - {{ none }} and undefined print nothing; true prints "true"; 1.0 "1.0";
//   - a break/continue drops the output of the iteration it ends, and a loop
//     whose iterations all ended in continue renders its else block;
//   - macros see the variables of their call site;
//   - str.strip/lstrip/rstrip ignore their argument and strip whitespace.
//
// Thread-compatible: one Interpreter per Render call.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "computed/chat/ast.h"
#include "computed/chat/scope.h"
#include "computed/chat/value.h"

namespace warp::chat {

// Bounds on one Render, so a template cannot hang or exhaust memory (a loop
// nested in a loop of range(10000000) rendered for hours): past either, Render
// fails with ResourceExhausted naming the template line. Release templates
// over a long conversation take tens of thousands of steps and a few hundred
// KiB; a prompt is at most a context of text (1M tokens ~ 4 MiB).
// A fuzzing build (WARP_FUZZ, the OSS-Fuzz define) reaches the same bounds
// 50x sooner: every input still takes the bounded paths, without spending
// seconds under ASan in each one it tries.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr uint64_t kMaxRenderSteps = 20'000;
inline constexpr size_t kMaxRenderBytes = 1 << 20;
inline constexpr size_t kMaxRenderItems = 20'000;
#else
inline constexpr uint64_t kMaxRenderSteps = 1'000'000;  // evaluations: ~1 s of rendering
inline constexpr size_t kMaxRenderBytes = 16 << 20;     // any one string, the output included
inline constexpr size_t kMaxRenderItems = 1'000'000;    // any one list, range() included
#endif

class Interpreter {
 public:
  Interpreter() = default;

  // Renders `program` with `globals` as the outermost scope.
  absl::StatusOr<std::string> Run(const NodeList& program, const ScopePtr& globals);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // --- Statements (interpreter.cc).
  absl::StatusOr<std::string> ExecBlock(const NodeList& block, const ScopePtr& scope);
  absl::StatusOr<Value> ExecIf(const IfNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> ExecFor(const ForNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> ExecSet(const SetNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> ExecMacro(const MacroNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> ExecCallBlock(const CallBlockNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> ExecFilterBlock(const FilterBlockNode& node, const ScopePtr& scope);
  absl::Status BindArgs(std::string_view macro_name, const std::vector<Param>& params, bool uses_varargs,
                        bool uses_kwargs, Args args, const ScopePtr& scope);
  absl::StatusOr<Value> RunBody(const NodeList& body, const ScopePtr& scope, std::string_view what);
  absl::Status BindTarget(const Node& target, const Value& item, Scope& scope);

  // --- Expressions (evaluate.cc).
  absl::StatusOr<Value> Evaluate(const Node& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateNode(const Node& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateOptional(const Node* node, const ScopePtr& scope) {
    return node == nullptr ? absl::StatusOr<Value>(Value()) : Evaluate(*node, scope);
  }
  absl::StatusOr<std::pair<Args, ObjectMap>> EvaluateArguments(const NodeList& args, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateCall(const CallNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateMember(const MemberNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateSlice(const Value& object, const SliceNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateBinary(const BinaryNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateTest(const TestNode& node, const ScopePtr& scope);
  absl::StatusOr<Value> EvaluateLiteral(const Node& node, const ScopePtr& scope);

  // --- Filters (filters.cc).
  absl::StatusOr<Value> ApplyFilter(const Value& operand, const Node& filter, const ScopePtr& scope);
  absl::StatusOr<Value> ApplyCallFilter(const Value& operand, const CallNode& call, const ScopePtr& scope);
  absl::StatusOr<Value> ApplyListCallFilter(const Value& operand, std::string_view name, const CallNode& call,
                                            const ScopePtr& scope);
  absl::StatusOr<Value> ApplyTojson(const Value& operand, const CallNode& call, const ScopePtr& scope);

  Flow flow_ = Flow::kNormal;
  SourcePos flow_pos_;  // where the pending break/continue is
  int call_depth_ = 0;  // nested macro calls
  uint64_t steps_ = 0;  // Evaluate calls, against kMaxRenderSteps
};

}  // namespace warp::chat
