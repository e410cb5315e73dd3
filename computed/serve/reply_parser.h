#pragma once

// A model's generated text as an OpenAI assistant message: the reasoning,
// the content and the tool calls, in the dialect of the model's chat template.
//
//   Qwen3        [<think>R</think>] C <tool_call>{"name": N, "arguments": A}</tool_call> ...
//   DeepSeek V3  [<think>R</think>] C <｜tool▁calls▁begin｜>
//                  <｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\nA\n```<｜tool▁call▁end｜>
//                  (V3.1: <｜tool▁call▁begin｜>N<｜tool▁sep｜>A<｜tool▁call▁end｜>) ...
//                <｜tool▁calls▁end｜>
//   Kimi K2      [<think>R</think>] C <|tool_calls_section_begin|>
//                  <|tool_call_begin|>functions.N:I<|tool_call_argument_begin|>A<|tool_call_end|>
//                  ... <|tool_calls_section_end|>
//   gpt-oss      harmony messages after the prompt's "<|start|>assistant":
//                  <|channel|>analysis<|message|>R<|end|>
//                  <|start|>assistant<|channel|>final<|message|>C<|return|>
//                  <|start|>assistant<|channel|>commentary to=functions.N <|constrain|>json
//                    <|message|>A<|call|>   (the recipient may also precede <|channel|>)
//
// The text must be decoded with special tokens (the markers are special
// tokens) and stop before the end-of-turn token (<|im_end|>,
// <｜end▁of▁sentence｜>, <|return|>, <|call|>): a harmony tool call whose
// <|call|> was eaten as the stop token still completes at Finish.
//
// Reasoning is recognised only at the start of a reply (a "<think>" later on
// is the model's text) or, with starts_in_reasoning, from the first byte, for
// the templates whose generation prompt opens the block itself.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace warp::computed::serve {

enum class ReplyFormat {
  kPlain,  // no parsing: the whole text is content
  kQwen3,  // also Hermes/Qwen2.5 <tool_call> templates and plain <think> ones
  kDeepSeekV3,
  kKimiK2,
  kGptOss,
};

std::string_view ReplyFormatName(ReplyFormat format);

// The dialect a chat template's source speaks, from the markers it writes.
ReplyFormat DetectReplyFormat(std::string_view chat_template_source);

// Whether the rendered prompt (with the generation prompt) leaves the reply
// inside a reasoning block: it ends with "<think>" (DeepSeek V3.1 thinking,
// Qwen3 thinking-2507, ...) or, for harmony, "<|channel|>analysis<|message|>".
bool ReplyStartsInReasoning(ReplyFormat format, std::string_view rendered_prompt);

struct ToolCall {
  std::string id;  // "call_..."; Kimi K2: the model's own "functions.NAME:IDX"
  std::string name;
  std::string arguments;  // a JSON text, compact

  bool operator==(const ToolCall&) const = default;
};

// What one Push or Finish adds to the reply. A tool call is reported once,
// whole, when its end marker (or the end of the reply) completes it.
struct ReplyDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  // Tool calls whose JSON (or layout) did not parse. Their text, markers
  // included, went into `content`: the user sees what the model wrote rather
  // than losing it, and the server can log the count.
  int malformed_tool_calls = 0;

  bool empty() const {
    return content.empty() && reasoning.empty() && tool_calls.empty() && malformed_tool_calls == 0;
  }
};

struct Reply {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCall> tool_calls;
  int malformed_tool_calls = 0;

  void Append(const ReplyDelta& delta);
  // {"role": "assistant", "content": C or null (when empty and there are tool
  // calls), "reasoning_content": R (when any), "tool_calls": [{"id", "type":
  // "function", "function": {"name", "arguments"}}] (when any)}.
  nlohmann::json ToMessageJson() const;
};

struct ReplyParserOptions {
  bool starts_in_reasoning = false;
  // The "call_..." ids are derived from this and the call's index, so that a
  // replay gives the same ids; the server passes a per-request random value.
  uint64_t call_id_seed = 0;
};

// Streaming: Push each decoded piece as it comes, then Finish once. A piece
// ending in a possible marker prefix ("<tool_", or half a UTF-8 character) is
// held back until the next piece decides it; no marker text is ever emitted
// as content (except inside a malformed tool call, see ReplyDelta).
// Leading and trailing whitespace of each content/reasoning stretch is
// dropped, as the templates' own "\n" around markers are. Pushing the whole
// text at once gives the same reply as any split of it.
// Thread-compatible: one parser per reply.
class ReplyParser {
 public:
  explicit ReplyParser(ReplyFormat format, ReplyParserOptions options = {});

  ReplyDelta Push(std::string_view piece);
  ReplyDelta Finish();

 private:
  enum class State {
    kContent,
    kReasoning,
    kToolSection,  // DeepSeek/Kimi: between calls of a tool-call section
    kToolCall,     // inside one call: the text is buffered until its end
    kHeader,       // harmony: a message header, up to <|message|>
    kBody,         // harmony: a message body
    kBetween,      // harmony: after <|end|>, before the next <|start|>
  };
  enum class Action {
    kThinkClose,
    kSectionOpen,
    kSectionClose,
    kCallOpen,
    kCallClose,
    kMessage,  // harmony <|message|>
    kStart,    // harmony <|start|>
    kEnd,      // harmony <|end|>, <|call|>, <|return|>
    kChannel,  // harmony <|channel|> with no <|start|> before it
  };
  enum class BodyKind { kContent, kReasoning, kToolCall };
  struct Marker {
    std::string_view text;
    Action action;
  };
  // Leading/trailing whitespace trimming of one output channel.
  struct Stretch {
    bool started = false;
    std::string pending_space;
  };

  void Run(bool final, ReplyDelta* out);
  std::vector<Marker> Markers() const;
  void Sink(std::string_view text, ReplyDelta* out);
  void OnMarker(const Marker& marker, ReplyDelta* out);
  void Emit(std::string_view text, std::string* channel, Stretch* stretch);
  void EndStretches();
  void OpenHarmonyBody();
  void KeepStrayHeader(ReplyDelta* out);
  // Ends the current call: a ToolCall, or its raw text as content.
  void FinishCall(std::string_view close_marker, ReplyDelta* out);
  bool ParseCall(ToolCall* call) const;

  ReplyFormat format_;
  ReplyParserOptions options_;
  State state_;
  bool think_allowed_;  // at the very start of the reply, before any text
  bool in_section_ = false;
  std::string buffer_;     // unscanned text: at most a held-back marker prefix
  std::string call_open_;  // the marker (harmony: header) that opened the call
  std::string call_body_;
  std::string header_;
  std::string recipient_;  // harmony: the current call's "functions.NAME"
  BodyKind body_kind_ = BodyKind::kContent;
  int calls_ = 0;
  Stretch content_stretch_;
  Stretch reasoning_stretch_;
};

// The whole reply at once: the same as one Push and Finish.
Reply ParseReply(ReplyFormat format, std::string_view text, ReplyParserOptions options = {});

}  // namespace warp::computed::serve
