#pragma once

// The markers of each chat dialect's reasoning and tool calls (reply_parser.h
// shows the layouts): what ReplyParser reads and ReplyGrammar makes a
// constrained reply write. Most are one special token in their tokenizer.

#include <string_view>

namespace warp::computed::serve {

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

// Qwen3 (Hermes).
inline constexpr std::string_view kQwenCallOpen = "<tool_call>";
inline constexpr std::string_view kQwenCallClose = "</tool_call>";

// DeepSeek V3 / R1 / V3.1.
inline constexpr std::string_view kDsSectionOpen = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view kDsSectionClose = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDsCallOpen = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view kDsCallClose = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDsSep = "<｜tool▁sep｜>";

// Kimi K2.
inline constexpr std::string_view kKimiSectionOpen = "<|tool_calls_section_begin|>";
inline constexpr std::string_view kKimiSectionClose = "<|tool_calls_section_end|>";
inline constexpr std::string_view kKimiCallOpen = "<|tool_call_begin|>";
inline constexpr std::string_view kKimiCallClose = "<|tool_call_end|>";
inline constexpr std::string_view kKimiArgs = "<|tool_call_argument_begin|>";

// Harmony (gpt-oss).
inline constexpr std::string_view kHarmonyStart = "<|start|>";
inline constexpr std::string_view kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>";
inline constexpr std::string_view kHarmonyCall = "<|call|>";
inline constexpr std::string_view kHarmonyReturn = "<|return|>";

}  // namespace warp::computed::serve
