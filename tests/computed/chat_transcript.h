#pragma once

// What `computed chat` printed, turn by turn, and what a fresh `computed run`
// over the same conversation answers: chat's rewound state must give a fresh
// run's reply, byte for byte (kimi_text_test, deepseek_v41_test).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "computed/run/model_text.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/run_command.h"

namespace warp::computed {

// A command's printed result: its output up to the newline before the stats
// line ("[N tokens ..."), or up to the final newline.
inline std::string Printed(const std::string& output) {
  size_t end = output.rfind("\n[");
  if (end == std::string::npos) end = output.size() - (absl::EndsWith(output, "\n") ? 1 : 0);
  return output.substr(0, end);
}

inline std::string Ids(const std::vector<int32_t>& ids) { return absl::StrJoin(ids, ","); }

inline std::vector<int32_t> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    int32_t id = -1;
    EXPECT_TRUE(absl::SimpleAtoi(field, &id)) << text;
    ids.push_back(id);
  }
  return ids;
}

struct ChatTurn {
  std::string reply;
  std::string stats;  // "[... | prompt N new + M from the KV cache ...]"
};

// Chat's output split: the banner line, then per turn the reply and its stats
// line, then the session's stats line.
inline std::vector<ChatTurn> ChatTurns(const std::string& out) {
  std::vector<size_t> stats;  // the newline that ends each reply
  for (size_t at = out.find("\n["); at != std::string::npos; at = out.find("\n[", at + 1)) {
    if (out.find("KV cache]", at) < out.find('\n', at + 1)) stats.push_back(at);
  }
  std::vector<ChatTurn> turns;
  size_t reply_begin = out.find('\n') + 1;
  for (size_t at : stats) {
    const size_t stats_end = out.find('\n', at + 1);
    turns.push_back({out.substr(reply_begin, at - reply_begin),
                     out.substr(at + 1, stats_end - at - 1)});
    reply_begin = stats_end + 1;
  }
  return turns;
}

// The prompt `messages` gives, rendered and tokenized as chat does.
inline std::vector<int32_t> PromptIds(const ModelText& text, const nlohmann::json& messages) {
  absl::StatusOr<std::string> prompt =
      text.chat_template->Render(messages, /*add_generation_prompt=*/true);
  EXPECT_TRUE(prompt.ok()) << prompt.status();
  absl::StatusOr<std::vector<int32_t>> ids = text.tokenizer->Encode(prompt.value_or(""));
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.value_or(std::vector<int32_t>{});
}

// The reply of a fresh session to `prompt`: `run --ids`, decoded as chat decodes it.
inline std::string FreshReply(const std::filesystem::path& model, const ModelText& text,
                              const std::vector<int32_t>& prompt, int max_tokens) {
  auto run = warp::testing::RunBinary(
      "computed", absl::StrCat("--log-level warn run ", model.string(), " --ids ", Ids(prompt),
                               " -n ", max_tokens));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  absl::StatusOr<std::string> reply =
      text.tokenizer->Decode(ParseIds(Printed(run.output)), /*skip_special_tokens=*/true);
  EXPECT_TRUE(reply.ok()) << reply.status();
  return reply.value_or("");
}

}  // namespace warp::computed
