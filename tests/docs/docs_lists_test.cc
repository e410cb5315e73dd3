// The lists the docs keep, checked against the code they describe, so they
// cannot drift: the families (README.md, docs/ENGINE.md), each family's
// record matrices and the tensor formats (docs/FORMAT.md), and the daemon's
// flags, config fields, defaults, cache policies and I/O engines
// (deploy/README.md). A checked table follows a `<!-- list:NAME -->` marker;
// a failure names the doc, the list and the entry that drifted.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/format/tensor_format.h"
#include "common/store/bank_set.h"
#include "common/store/eviction_order.h"
#include "computed/model/family.h"
#include "computed/model/model_config.h"
#include "expertd/serve.h"
#include "expertd/serve_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "warp/v1/config.pb.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using Row = std::vector<std::string>;
using ::warp::testing::SourceDir;

std::string ReadDoc(const std::string& relative) {
  std::ifstream in(SourceDir() / relative);
  EXPECT_TRUE(in.good()) << "cannot read " << (SourceDir() / relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Cells of one Markdown table row; `\|` stays inside its cell.
Row SplitRow(std::string_view line) {
  Row cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {  // past the leading '|'
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(std::string(absl::StripAsciiWhitespace(cell)));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// The body rows of the table after `<!-- list:NAME -->` in `doc_text`.
std::vector<Row> ListTable(const std::string& doc, const std::string& doc_text,
                           const std::string& name) {
  const std::string marker = "<!-- list:" + name + " -->";
  const size_t at = doc_text.find(marker);
  EXPECT_NE(at, std::string::npos) << doc << ": no " << marker;
  if (at == std::string::npos) return {};
  std::istringstream lines(doc_text.substr(at + marker.size()));
  std::vector<Row> rows;
  std::string line;
  int table_lines = 0;
  while (std::getline(lines, line)) {
    if (line.empty() && table_lines == 0) continue;
    if (!line.starts_with("|")) break;
    if (++table_lines > 2) rows.push_back(SplitRow(line));  // past the header and |---|
  }
  EXPECT_FALSE(rows.empty()) << doc << ": no table after " << marker;
  return rows;
}

// The `quoted` spans of a cell, in order.
std::vector<std::string> Backticked(std::string_view cell) {
  std::vector<std::string> spans;
  size_t at = 0;
  while ((at = cell.find('`', at)) != std::string_view::npos) {
    const size_t end = cell.find('`', at + 1);
    if (end == std::string_view::npos) break;
    spans.emplace_back(cell.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return spans;
}

// Reports names in one set and not the other, naming the doc and its list.
void ExpectSameNames(const std::set<std::string>& code, const std::set<std::string>& doc,
                     const std::string& where) {
  for (const std::string& name : code) {
    EXPECT_TRUE(doc.contains(name)) << where << " does not list `" << name << "`";
  }
  for (const std::string& name : doc) {
    EXPECT_TRUE(code.contains(name)) << where << " lists `" << name << "`, which the code lacks";
  }
}

// ---- Families ------------------------------------------------------------

// Every family: a file pair in computed/model/families/, registered under
// its file's name, each of the registry's families (AllFamilies) once.
std::set<std::string> CodeFamilies() {
  std::set<std::string> names;
  std::set<int> archs;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(SourceDir() / "computed" / "model" / "families")) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() != ".h" || stem == "family_parts") continue;
    absl::StatusOr<computed::Architecture> arch = computed::ParseArchitecture(stem);
    EXPECT_TRUE(arch.ok()) << "families/" << stem
                           << ".h is not a registered family: " << arch.status();
    if (!arch.ok()) continue;
    EXPECT_EQ(computed::FamilyOf(*arch).name(), stem) << "families/" << stem << ".h";
    names.insert(stem);
    archs.insert(static_cast<int>(*arch));
  }
  for (const computed::ModelFamily* family : computed::AllFamilies()) {
    EXPECT_TRUE(archs.contains(static_cast<int>(family->arch())))
        << "family " << family->name() << " has no file pair in computed/model/families/";
  }
  EXPECT_EQ(archs.size(), computed::AllFamilies().size());
  return names;
}

// The names of `text` outside parentheses, e.g. "a (A), b, c." -> a b c.
std::set<std::string> NamesOutsideParens(std::string_view text) {
  std::set<std::string> names;
  std::string word;
  int depth = 0;
  for (const char c : std::string(text) + " ") {
    depth += (c == '(') - (c == ')');
    if (depth == 0 && (absl::ascii_isalnum(c) || c == '_')) {
      word += c;
    } else {
      if (!word.empty()) names.insert(word);
      word.clear();
    }
  }
  return names;
}

TEST(DocsListsTest, ReadmeFamilyListIsEveryFamily) {
  const std::string readme = ReadDoc("README.md");
  const std::string marker = "# Families:";
  const size_t at = readme.find(marker);
  ASSERT_NE(at, std::string::npos) << "README.md: no \"" << marker << "\" line";
  const size_t end = readme.find('.', at);  // the list ends its sentence
  std::string list = readme.substr(at + marker.size(), end - at - marker.size());
  std::replace(list.begin(), list.end(), '#', ' ');  // continued comment lines
  ExpectSameNames(CodeFamilies(), NamesOutsideParens(list), "README.md's \"Families:\" line");
}

TEST(DocsListsTest, EngineFamilyTableHasEveryFamilyOnce) {
  std::set<std::string> listed;
  for (const Row& row : ListTable("docs/ENGINE.md", ReadDoc("docs/ENGINE.md"), "families")) {
    ASSERT_FALSE(row.empty());
    const std::string name = row[0].substr(0, row[0].find(' '));  // "deepseek_v3 (Kimi K2)"
    EXPECT_TRUE(listed.insert(name).second)
        << "docs/ENGINE.md list:families: `" << name << "` twice";
  }
  ExpectSameNames(CodeFamilies(), listed, "docs/ENGINE.md list:families");
}

TEST(DocsListsTest, FormatRecordMatricesAreTheFamilies) {
  std::set<std::string> listed;
  for (const Row& row : ListTable("docs/FORMAT.md", ReadDoc("docs/FORMAT.md"), "record-matrices")) {
    ASSERT_GE(row.size(), 2u);
    const std::vector<std::string> matrices = Backticked(row[1]);
    for (const std::string& family : Backticked(row[0])) {
      EXPECT_TRUE(listed.insert(family).second)
          << "docs/FORMAT.md list:record-matrices: `" << family << "` in two rows";
      absl::StatusOr<computed::Architecture> arch = computed::ParseArchitecture(family);
      if (!arch.ok()) continue;  // reported by ExpectSameNames below
      computed::ModelConfig config;
      config.arch = *arch;
      std::vector<std::string> code;
      for (const auto& spec :
           computed::FamilyOf(*arch).ExpertMatrices(config, TensorFormat::kF32)) {
        code.push_back(spec.name);
      }
      EXPECT_EQ(matrices, code) << "docs/FORMAT.md list:record-matrices: the row of `" << family
                                << "` drifted from its ExpertMatrices";
    }
  }
  ExpectSameNames(CodeFamilies(), listed, "docs/FORMAT.md list:record-matrices");
}

// ---- Tensor formats ------------------------------------------------------

TEST(DocsListsTest, FormatTensorFormatTableNamesEveryFormatOnce) {
  std::set<std::string> listed;
  for (const Row& row : ListTable("docs/FORMAT.md", ReadDoc("docs/FORMAT.md"), "tensor-formats")) {
    const std::vector<std::string> names = Backticked(row.at(0));
    ASSERT_EQ(names.size(), 1u) << "docs/FORMAT.md list:tensor-formats: row " << row[0];
    const std::optional<TensorFormat> format = ParseTensorFormat(names[0]);
    EXPECT_TRUE(format.has_value())
        << "docs/FORMAT.md list:tensor-formats: `" << names[0] << "` is no TensorFormat";
    if (format) {
      EXPECT_EQ(TensorFormatName(*format), names[0]);
    }
    EXPECT_TRUE(listed.insert(names[0]).second)
        << "docs/FORMAT.md list:tensor-formats: `" << names[0] << "` twice";
  }
  // Every enumerator from kF32 on has a name; the first without one ends the enum.
  std::set<std::string> code;
  for (int f = 0; TensorFormatName(static_cast<TensorFormat>(f)) != "unknown"; ++f) {
    code.insert(std::string(TensorFormatName(static_cast<TensorFormat>(f))));
  }
  EXPECT_GT(code.size(), static_cast<size_t>(TensorFormat::kF8E4M3B32));
  ExpectSameNames(code, listed, "docs/FORMAT.md list:tensor-formats");
}

// ---- The daemon's options ------------------------------------------------

std::vector<Row> DaemonTable() {
  return ListTable("deploy/README.md", ReadDoc("deploy/README.md"), "expertd-options");
}

const Row* DaemonRow(const std::vector<Row>& rows, const std::string& field) {
  for (const Row& row : rows) {
    const std::vector<std::string> fields = Backticked(row.at(1));
    if (std::find(fields.begin(), fields.end(), field) != fields.end()) return &row;
  }
  ADD_FAILURE() << "deploy/README.md list:expertd-options: no row for `" << field << "`";
  return nullptr;
}

TEST(DocsListsTest, DaemonTableNamesEveryConfigFieldOnce) {
  const google::protobuf::Descriptor* config = v1::ExpertdConfig::descriptor();
  std::set<std::string> code, listed;
  for (int i = 0; i < config->field_count(); ++i) code.insert(config->field(i)->name());
  for (const Row& row : DaemonTable()) {
    ASSERT_GE(row.size(), 4u) << "deploy/README.md list:expertd-options: " << row[0];
    for (const std::string& field : Backticked(row[1])) {
      EXPECT_TRUE(listed.insert(field).second)
          << "deploy/README.md list:expertd-options: `" << field << "` twice";
    }
  }
  ExpectSameNames(code, listed, "deploy/README.md list:expertd-options (config fields)");
}

TEST(DocsListsTest, DaemonTableNamesEveryServeFlag) {
  CLI::App app;
  expertd::AddServeCommand(app);
  std::set<std::string> code, listed;
  for (const CLI::Option* option : app.get_subcommand("serve")->get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name != "help") code.insert("--" + name);
    }
  }
  for (const Row& row : DaemonTable()) {
    if (absl::StrContains(row[0], "(before `serve`)")) continue;  // expertd's own flags
    for (const std::string& flag : Backticked(row[0])) {
      if (flag.starts_with("--")) listed.insert(flag.substr(0, flag.find(' ')));
    }
  }
  ExpectSameNames(code, listed, "deploy/README.md list:expertd-options (serve flags)");
}

// A default cell that starts with a `value` is checked against the field
// NormalizeConfig fills in for a config that sets only model and listen.
TEST(DocsListsTest, DaemonTableDefaultsAreNormalizeConfigs) {
  v1::ExpertdConfig minimal;
  minimal.set_model("m.warp");
  minimal.add_listen("unix:/tmp/docs-lists.sock");
  absl::StatusOr<v1::ExpertdConfig> normalized = expertd::NormalizeConfig(minimal);
  WARP_ASSERT_OK(normalized);
  const google::protobuf::Reflection* reflection = normalized->GetReflection();
  int checked = 0;
  for (const Row& row : DaemonTable()) {
    const std::vector<std::string> fields = Backticked(row.at(1));
    if (fields.size() != 1 || !row.at(2).starts_with("`")) continue;
    const std::string documented = Backticked(row[2])[0];
    const google::protobuf::FieldDescriptor* field =
        v1::ExpertdConfig::descriptor()->FindFieldByName(fields[0]);
    ASSERT_NE(field, nullptr) << fields[0];
    std::string code;
    switch (field->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
        code = "\"" + reflection->GetString(*normalized, field) + "\"";
        if (documented != "\"\"") code = code.substr(1, code.size() - 2);
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
        code = reflection->GetBool(*normalized, field) ? "true" : "false";
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
        code = std::to_string(reflection->GetUInt32(*normalized, field));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        code = std::to_string(reflection->GetUInt64(*normalized, field));
        break;
      default:
        FAIL() << "a default of " << fields[0] << "'s type";
    }
    const bool is_number = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32 ||
                           field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64;
    // Numbers as C writes them: 0660 is octal, as socket modes are.
    const std::string doc_value =
        is_number ? std::to_string(std::strtoull(documented.c_str(), nullptr, 0)) : documented;
    EXPECT_EQ(doc_value, code) << "deploy/README.md list:expertd-options: the default of `"
                               << fields[0] << "` is `" << documented << "`";
    ++checked;
  }
  EXPECT_GE(checked, 15)
      << "deploy/README.md list:expertd-options: defaults no longer in backticks";
}

TEST(DocsListsTest, DaemonTableCachePoliciesAreEvictionPolicies) {
  std::set<std::string> code;
  for (int p = 0; std::string(EvictionPolicyName(EvictionPolicy(p))) != "?"; ++p) {
    code.insert(EvictionPolicyName(EvictionPolicy(p)));
  }
  const std::vector<Row> rows = DaemonTable();
  const Row* row = DaemonRow(rows, "cache_policy");
  ASSERT_NE(row, nullptr);
  const std::vector<std::string> meaning = Backticked(row->at(3));
  ExpectSameNames(code, std::set<std::string>(meaning.begin(), meaning.end()),
                  "deploy/README.md list:expertd-options, cache_policy");
  EXPECT_EQ(Backticked(row->at(2)),
            std::vector<std::string>{EvictionPolicyName(kDefaultEvictionPolicy)})
      << "deploy/README.md list:expertd-options: the default cache_policy";
}

TEST(DocsListsTest, DaemonTableIoEnginesAreIoBackends) {
  const std::set<std::string> code = {IoBackendName(IoBackend::kPread),
                                      IoBackendName(IoBackend::kUring)};
  const std::vector<Row> rows = DaemonTable();
  const Row* row = DaemonRow(rows, "io_engine");
  ASSERT_NE(row, nullptr);
  const std::vector<std::string> meaning = Backticked(row->at(3));
  for (const std::string& name : meaning) {
    absl::StatusOr<IoBackend> backend = ParseIoBackend(name);
    EXPECT_TRUE(backend.ok() && IoBackendName(*backend) == name)
        << "deploy/README.md list:expertd-options, io_engine: `" << name << "`";
  }
  ExpectSameNames(code, std::set<std::string>(meaning.begin(), meaning.end()),
                  "deploy/README.md list:expertd-options, io_engine");
  EXPECT_EQ(Backticked(row->at(2)), std::vector<std::string>{IoBackendName(kDefaultIoBackend)})
      << "deploy/README.md list:expertd-options: the default io_engine";
}

}  // namespace
}  // namespace warp
