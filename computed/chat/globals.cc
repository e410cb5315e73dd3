// Global names of every render: constants, namespace(), range(),
// raise_exception() and strftime_now(), as the reference's setupGlobals.

#include <time.h>

#include <cmath>
#include <ctime>

#include "absl/status/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

// range(1e9) would exhaust memory; range(1e7) took 2 GiB under ASan (tests/fuzz).
constexpr double kMaxRangeItems = kMaxRenderItems;

absl::Status Error(std::string_view message) { return absl::InvalidArgumentError(std::string(message)); }

absl::StatusOr<std::pair<std::string, Value>> NamespacePair(const Value& pair) {
  std::vector<Value> values;
  if (pair.is(Type::kArray)) {
    values = pair.array();
  } else if (pair.is(Type::kString)) {
    for (std::string& c : CodePoints(pair.string())) values.push_back(Value::String(std::move(c)));
  }
  if (values.size() != 2) return Error("namespace() expected a dict or a list of [key, value] pairs");
  if (!values[0].is(Type::kString)) return Error("namespace() keys must be strings");
  return std::make_pair(values[0].string(), values[1]);
}

absl::StatusOr<Value> MakeNamespace(Args args) {
  ObjectMap entries;
  ObjectMap kwargs;
  if (!args.empty() && args.back().is_kwargs()) {
    kwargs = args.back().object();
    args.pop_back();
  }
  if (args.size() > 1) return Error(Cat("namespace() takes at most 1 positional argument, got ", args.size()));
  if (args.size() == 1) {
    if (args[0].is(Type::kObject)) {
      for (const auto& [key, value] : args[0].object()) entries.Set(key, value);
    } else if (args[0].is(Type::kArray)) {
      for (const Value& pair : args[0].array()) {
        auto entry = NamespacePair(pair);
        if (!entry.ok()) return entry.status();
        entries.Set(entry->first, entry->second);
      }
    } else {
      return Error(Cat("namespace() cannot read a ", TypeName(args[0])));
    }
  }
  for (const auto& [key, value] : kwargs) entries.Set(key, value);
  return Value::Namespace(std::move(entries));
}

absl::StatusOr<Value> Range(const Args& args) {
  if (args.empty() || args.size() > 3) return Error("range() takes 1 to 3 arguments");
  for (const Value& arg : args) {
    if (!arg.is_number()) return Error(Cat("range() arguments must be numbers, got ", TypeName(arg)));
  }
  double start = 0;
  double stop = args[0].number();
  double step = 1;
  if (args.size() > 1) {
    start = args[0].number();
    stop = args[1].number();
  }
  if (args.size() > 2) step = args[2].number();
  if (step == 0) return Error("range() step must not be zero");
  if (std::fabs((stop - start) / step) > kMaxRangeItems) return Error("range() is too large");
  std::vector<Value> items;
  for (double i = start; step > 0 ? i < stop : i > stop; i += step) {
    items.push_back(std::floor(i) == i ? Value::Int(i) : Value::Float(i));
  }
  return Value::Array(std::move(items));
}

absl::StatusOr<Value> RaiseException(const Args& args) {
  std::string message;  // new Error(undefined).message is "" (none holds undefined too)
  if (!args.empty() && !args[0].is_none_or_undefined()) {
    absl::StatusOr<std::string> text = ConcatString(args[0]);
    message = text.ok() ? *text : "function";
  }
  return Error(Cat("raise_exception: ", message));
}

// Python's strftime for %Y %m %d %b %B %H %M %% in local time, as the
// reference implements it; other directives are left as written.
std::string StrftimeNow(const std::string& format) {
  static constexpr const char* kMonths[] = {"January", "February", "March", "April", "May", "June", "July",
                                            "August", "September", "October", "November", "December"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  auto pad2 = [](int n) { return n < 10 ? Cat("0", n) : Cat(n); };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    const char directive = format[i + 1];
    switch (directive) {
      case 'Y': out += Cat(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'b': out += std::string(kMonths[tm.tm_mon]).substr(0, 3); break;
      case 'B': out += kMonths[tm.tm_mon]; break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      case '%': out += '%'; break;
      default:
        out += '%';
        continue;  // not a directive: keep both characters
    }
    ++i;
  }
  return out;
}

Value Native(absl::StatusOr<Value> (*fn)(const Args&)) {
  return Value::Function([fn](Args args, const ScopePtr&) { return fn(args); });
}

}  // namespace

const Value& NamespaceFunction() {
  static const Value* const fn =
      new Value(Value::Function([](Args args, const ScopePtr&) { return MakeNamespace(std::move(args)); }));
  return *fn;
}

bool IsGlobalName(std::string_view name) {
  static constexpr std::string_view kNames[] = {"false", "true", "none", "False", "True", "None",
                                                "raise_exception", "range", "strftime_now", "namespace"};
  for (std::string_view global : kNames) {
    if (global == name) return true;
  }
  return false;
}

void InstallGlobals(Scope& scope) {
  scope.Set("false", Value::Bool(false));
  scope.Set("true", Value::Bool(true));
  scope.Set("none", Value::None());
  scope.Set("False", Value::Bool(false));
  scope.Set("True", Value::Bool(true));
  scope.Set("None", Value::None());
  scope.Set("raise_exception", Native(&RaiseException));
  scope.Set("range", Native(&Range));
  scope.Set("strftime_now", Native([](const Args& args) -> absl::StatusOr<Value> {
    if (args.empty() || !args[0].is(Type::kString)) return Error("strftime_now() needs a format string");
    return Value::String(StrftimeNow(args[0].string()));
  }));
}

}  // namespace warp::chat
