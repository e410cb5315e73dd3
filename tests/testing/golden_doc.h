#pragma once

// docs/FORMAT.md's worked examples, for the golden tests that pin them: a
// block is the fenced text after a "<!-- golden:NAME -->" marker line.

#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/fixtures.h"

namespace warp::testing {

inline std::string FormatDoc() {
  std::ifstream in(SourceDir() / "docs" / "FORMAT.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string GoldenBlock(const std::string& doc, const std::string& name) {
  const std::string marker = "<!-- golden:" + name + " -->\n```text\n";
  const size_t begin = doc.find(marker);
  if (begin == std::string::npos) return "(no block " + name + " in docs/FORMAT.md)";
  const size_t start = begin + marker.size();
  return doc.substr(start, doc.find("```", start) - start);
}

}  // namespace warp::testing
