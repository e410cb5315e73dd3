#include "tests/chat/reference.h"

#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"

namespace warp::chat::testing {
namespace fs = std::filesystem;

namespace {

// Writes `cases` to a temporary CASES_JSON file, runs the script on it and
// parses the printed array of results.
absl::StatusOr<std::vector<ReferenceResult>> RenderBatch(const std::vector<ReferenceCase>& cases) {
  nlohmann::ordered_json batch = nlohmann::ordered_json::array();
  for (const ReferenceCase& c : cases) batch.push_back({{"template", c.template_source}, {"context", c.context}});
  std::string pattern = (fs::temp_directory_path() / "warp_chat_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  const fs::path dir = pattern;
  const fs::path cases_file = dir / "cases.json";
  std::ofstream(cases_file) << batch.dump();
  const fs::path script = warp::testing::SourceDir() / "tests" / "chat" / "reference_render.py";
  absl::StatusOr<std::string> output =
      warp::testing::RunScript("/usr/bin/python3", script, {"--batch", cases_file.string()});
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (!output.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        output.status().message(), " (is python3-jinja2 installed? deploy/install-deps.sh installs it)"));
  }
  const nlohmann::json results = nlohmann::json::parse(*output, nullptr, /*allow_exceptions=*/false);
  if (!results.is_array() || results.size() != cases.size()) {
    return absl::InternalError("reference_render.py printed something other than one result per case");
  }
  std::vector<ReferenceResult> out;
  for (const nlohmann::json& r : results) {
    out.push_back({.ok = r.value("ok", false), .output = r.value("output", ""), .error = r.value("error", "")});
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<ReferenceResult>> RenderWithPython(const std::vector<ReferenceCase>& cases) {
  return RenderBatch(cases);
}

std::string Difference(const absl::StatusOr<std::string>& ours, const ReferenceResult& python) {
  if (!python.ok) {
    if (!ours.ok()) return "";
    return absl::StrCat("python fails (", python.error, ") but WARP renders:\n", Visible(*ours));
  }
  if (!ours.ok()) {
    return absl::StrCat("WARP fails (", ours.status().ToString(), ") but python renders:\n", Visible(python.output));
  }
  if (*ours == python.output) return "";
  return absl::StrCat("WARP:\n", Visible(*ours), "\npython:\n", Visible(python.output));
}

void ExpectOnlyKnownDivergences(const std::vector<Comparison>& comparisons, std::span<const KnownDivergence> known,
                                std::string_view list_name) {
  std::map<std::string_view, std::string_view> reasons;
  for (const KnownDivergence& k : known) {
    EXPECT_TRUE(reasons.emplace(k.id, k.reason).second) << std::string(list_name) << " lists " << k.id << " twice";
  }
  for (const Comparison& c : comparisons) {
    const auto listed = reasons.find(c.id);
    if (listed == reasons.end()) {
      if (!c.difference.empty()) {
        ADD_FAILURE() << c.id << " differs from Python Jinja2 and is not in " << list_name << ":\n"
                      << c.difference << "\ntemplate:\n" << Visible(c.source);
      }
      continue;
    }
    if (c.difference.empty()) {
      ADD_FAILURE() << c.id << " now renders as Python Jinja2 does: fixed, remove it from " << list_name << " ("
                    << listed->second << "); template:\n" << Visible(c.source);
    }
    reasons.erase(listed);
  }
  for (const auto& [id, reason] : reasons) {
    ADD_FAILURE() << list_name << " lists " << id << ", which names no case (" << reason << ")";
  }
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
