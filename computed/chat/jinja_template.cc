#include "computed/chat/jinja_template.h"

#include "absl/status/status.h"
#include "computed/chat/ast.h"
#include "computed/chat/builtins.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/parser.h"
#include "computed/chat/position.h"
#include "computed/chat/scope.h"
#include "computed/chat/strings.h"
#include "computed/chat/value.h"

namespace warp::chat {
namespace {

// "<origin> line 3, column 5: message", or "<origin>: message" without a position.
absl::Status WithOrigin(const absl::Status& status, std::string_view origin) {
  const std::string_view separator = HasPosition(status) ? " " : ": ";
  return absl::Status(status.code(), Cat(origin, separator, status.message()));
}

}  // namespace

struct JinjaTemplate::Program {
  std::string source;
  std::string origin;
  NodeList nodes;
};

absl::StatusOr<JinjaTemplate> JinjaTemplate::Parse(std::string_view source, std::string origin) {
  absl::StatusOr<NodeList> nodes = ParseTemplate(source);
  if (!nodes.ok()) return WithOrigin(nodes.status(), origin);
  auto program = std::make_shared<Program>();
  program->source = std::string(source);
  program->origin = std::move(origin);
  program->nodes = *std::move(nodes);
  return JinjaTemplate(std::move(program));
}

template <typename Json>
absl::StatusOr<std::string> JinjaTemplate::RenderJson(const Json& context) const {
  if (!context.is_object()) {
    return absl::InvalidArgumentError(
        Cat(program_->origin, ": the render context must be a JSON object, got ", context.type_name()));
  }
  auto globals = std::make_shared<Scope>();
  InstallGlobals(*globals);
  for (auto it = context.begin(); it != context.end(); ++it) {
    if (IsGlobalName(it.key())) {
      return absl::InvalidArgumentError(Cat(program_->origin, ": the context variable '", it.key(),
                                                     "' would redefine a Jinja global"));
    }
    globals->Set(it.key(), FromJson(it.value()));
  }
  Interpreter interpreter;
  absl::StatusOr<std::string> out = interpreter.Run(program_->nodes, globals);
  if (!out.ok()) return WithOrigin(out.status(), program_->origin);
  return out;
}

absl::StatusOr<std::string> JinjaTemplate::Render(const nlohmann::json& context) const {
  return RenderJson(context);
}

absl::StatusOr<std::string> JinjaTemplate::RenderOrdered(const nlohmann::ordered_json& context) const {
  return RenderJson(context);
}

const std::string& JinjaTemplate::source() const { return program_->source; }
const std::string& JinjaTemplate::origin() const { return program_->origin; }

}  // namespace warp::chat
