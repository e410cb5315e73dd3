#include "tests/chat/reference.h"

#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"

namespace warp::chat::testing {
namespace {

namespace fs = std::filesystem;

std::string ShellQuote(const std::string& arg) {
  std::string quoted = "'";
  for (const char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted.push_back(c);
    }
  }
  return quoted + "'";
}

std::string NodeBinary() { return access("/usr/bin/node", X_OK) == 0 ? "/usr/bin/node" : "node"; }

absl::StatusOr<std::string> RunAndCapture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("popen failed: ", command));
  std::string output;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) return absl::InternalError(absl::StrCat("exit status ", status, " from: ", command));
  return output;
}

}  // namespace

absl::StatusOr<std::vector<ReferenceResult>> RenderWithReference(const std::vector<ReferenceCase>& cases) {
  const fs::path source = warp::testing::SourceDir();
  const fs::path jinja = source / "tests" / "npm" / "node_modules" / "@huggingface" / "jinja";
  if (!fs::exists(jinja / "dist" / "index.js")) {
    return absl::FailedPreconditionError(
        absl::StrCat(jinja.string(), " is missing: run tests/npm/install.sh to install the reference renderer"));
  }
  nlohmann::json batch = nlohmann::json::array();
  for (const ReferenceCase& c : cases) batch.push_back({{"template", c.template_source}, {"context", c.context}});
  std::string pattern = (fs::temp_directory_path() / "warp_chat_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const fs::path dir = pattern;
  const fs::path cases_file = dir / "cases.json";
  std::ofstream(cases_file) << batch.dump();
  const fs::path script = source / "tests" / "chat" / "reference_render.mjs";
  absl::StatusOr<std::string> output = RunAndCapture(
      absl::StrCat(NodeBinary(), " ", ShellQuote(script.string()), " --batch ", ShellQuote(cases_file.string())));
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (!output.ok()) return output.status();
  const nlohmann::json results = nlohmann::json::parse(*output, nullptr, /*allow_exceptions=*/false);
  if (!results.is_array() || results.size() != cases.size()) {
    return absl::InternalError("reference_render.mjs printed something other than one result per case");
  }
  std::vector<ReferenceResult> out;
  for (const nlohmann::json& r : results) {
    ReferenceResult result;
    result.ok = r.value("ok", false);
    result.output = r.value("output", "");
    result.error = r.value("error", "");
    out.push_back(std::move(result));
  }
  return out;
}

std::string Visible(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace warp::chat::testing
