#include "tests/chat/reference.h"

#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"

namespace warp::chat::testing {
namespace fs = std::filesystem;

absl::StatusOr<std::vector<ReferenceResult>> RenderWithReference(const std::vector<ReferenceCase>& cases) {
  const fs::path source = warp::testing::SourceDir();
  absl::StatusOr<fs::path> node_modules = warp::testing::NodeModulesDir("@huggingface/jinja");
  if (!node_modules.ok()) return node_modules.status();
  nlohmann::ordered_json batch = nlohmann::ordered_json::array();
  for (const ReferenceCase& c : cases) batch.push_back({{"template", c.template_source}, {"context", c.context}});
  std::string pattern = (fs::temp_directory_path() / "warp_chat_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const fs::path dir = pattern;
  const fs::path cases_file = dir / "cases.json";
  std::ofstream(cases_file) << batch.dump();
  const fs::path script = source / "tests" / "chat" / "reference_render.mjs";
  absl::StatusOr<std::string> output =
      warp::testing::RunNode(script, {"--batch", cases_file.string()});
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
