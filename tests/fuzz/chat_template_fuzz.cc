// A Jinja chat template: parsed, then rendered with a small fixed
// conversation and the special tokens, as computed renders a release's
// template. Rendering must end within the -timeout and -rss_limit_mb the runs
// set: a template whose output or work grows without bound is a finding.

#include <cstddef>
#include <cstdint>

#include "computed/chat/chat_template.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp::chat;
  warp::fuzz::Init();
  static const nlohmann::json* messages = new nlohmann::json(nlohmann::json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b>there</b> 日本"},
    {"role": "assistant", "content": "Hello.", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]},
    {"role": "user", "content": [{"type": "text", "text": "2+2?"}]}
  ])"));
  static const nlohmann::json* specials = new nlohmann::json(nlohmann::json::parse(
      R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "unk_token": "<unk>"})"));
  static const nlohmann::json* extra =
      new nlohmann::json(nlohmann::json::parse(R"({"enable_thinking": false})"));
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromSource(
      std::string(warp::fuzz::AsText(data, size)), "fuzz.jinja", *specials);
  if (!chat.ok()) return 0;
  (void)chat->Render(*messages, /*add_generation_prompt=*/true, *extra);
  return 0;
}
