#include "tests/chat/reference.h"

#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"

namespace warp::chat::testing {
namespace fs = std::filesystem;

namespace {

// Writes `cases` to a temporary CASES_JSON file, runs `run` on it and parses
// the printed array of results.
template <typename Run>
absl::StatusOr<std::vector<ReferenceResult>> RenderBatch(const std::vector<ReferenceCase>& cases,
                                                         std::string_view script_name, Run run) {
  nlohmann::ordered_json batch = nlohmann::ordered_json::array();
  for (const ReferenceCase& c : cases) batch.push_back({{"template", c.template_source}, {"context", c.context}});
  std::string pattern = (fs::temp_directory_path() / "warp_chat_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const fs::path dir = pattern;
  const fs::path cases_file = dir / "cases.json";
  std::ofstream(cases_file) << batch.dump();
  absl::StatusOr<std::string> output = run(cases_file);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (!output.ok()) return output.status();
  const nlohmann::json results = nlohmann::json::parse(*output, nullptr, /*allow_exceptions=*/false);
  if (!results.is_array() || results.size() != cases.size()) {
    return absl::InternalError(absl::StrCat(std::string(script_name), " printed something other than one result per case"));
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

}  // namespace

absl::StatusOr<std::vector<ReferenceResult>> RenderWithJs(const std::vector<ReferenceCase>& cases) {
  absl::StatusOr<fs::path> node_modules = warp::testing::NodeModulesDir("@huggingface/jinja");
  if (!node_modules.ok()) return node_modules.status();
  const fs::path script = warp::testing::SourceDir() / "tests" / "chat" / "reference_render.mjs";
  return RenderBatch(cases, "reference_render.mjs", [&](const fs::path& cases_file) {
    return warp::testing::RunNode(script, {"--batch", cases_file.string()});
  });
}

absl::StatusOr<std::vector<ReferenceResult>> RenderWithReference(const std::vector<ReferenceCase>& cases) {
  absl::StatusOr<std::vector<ReferenceResult>> js = RenderWithJs(cases);
  if (!js.ok()) return js.status();
  absl::StatusOr<std::vector<ReferenceResult>> python = RenderWithPython(cases);
  if (!python.ok()) return python.status();
  for (size_t i = 0; i < cases.size(); ++i) {
    ReferenceResult& expected = (*js)[i];
    ReferenceResult& py = (*python)[i];
    // Python printed an object's address (a generator, an iterator): WARP
    // cannot print that, and keeps the JavaScript rendering (a list).
    if (py.ok && (py.output.find(" object at 0x") != std::string::npos ||
                  py.output.find("<generator object ") != std::string::npos)) {
      continue;
    }
    const bool agree = expected.ok == py.ok && (!py.ok || expected.output == py.output);
    if (!agree) {
      expected = std::move(py);  // issue 16: where the two differ, Jinja2 is right
      expected.js_differs = true;
    }
  }
  return js;
}

absl::StatusOr<std::vector<ReferenceResult>> RenderWithPython(const std::vector<ReferenceCase>& cases) {
  const fs::path script = warp::testing::SourceDir() / "tests" / "chat" / "reference_render.py";
  return RenderBatch(cases, "reference_render.py", [&](const fs::path& cases_file) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::string> output =
        warp::testing::RunScript("/usr/bin/python3", script, {"--batch", cases_file.string()});
    if (!output.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          output.status().message(), " (is python3-jinja2 installed? deploy/install-deps.sh installs it)"));
    }
    return output;
  });
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
