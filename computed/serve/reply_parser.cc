#include "computed/serve/reply_parser.h"

#include <algorithm>
#include <utility>

#include "computed/serve/reply_markers.h"

namespace warp::computed::serve {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kSpace = " \t\r\n";

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) + 1 - begin);
}

// Bytes at the end of `s` that start a UTF-8 character not yet complete.
size_t IncompleteUtf8Tail(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    const auto byte = static_cast<unsigned char>(s[s.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

// The longest end of `s` that is a proper prefix of a marker.
size_t MarkerPrefixTail(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// `text` as compact JSON, or false when it is not one JSON value.
bool CompactJson(std::string_view text, std::string* out) {
  const OrderedJson value = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return false;
  *out = value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  return true;
}

// DeepSeek V3 wraps the arguments in a ```json fence.
std::string_view StripFence(std::string_view text) {
  text = Trim(text);
  if (text.starts_with("```")) {
    const size_t newline = text.find('\n');
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    text = Trim(text);
    if (text.ends_with("```")) text = Trim(text.substr(0, text.size() - 3));
  }
  return text;
}

// OpenAI-looking "call_" + 24 alphanumerics, a function of (seed, index).
std::string MakeCallId(uint64_t seed, int index) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(index) + 1));
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    state += 0x9E3779B97F4A7C15ull;  // splitmix64
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    id += kAlphabet[z % 62];
  }
  return id;
}

}  // namespace

std::string_view ReplyFormatName(ReplyFormat format) {
  switch (format) {
    case ReplyFormat::kPlain:
      return "plain";
    case ReplyFormat::kQwen3:
      return "qwen3";
    case ReplyFormat::kDeepSeekV3:
      return "deepseek_v3";
    case ReplyFormat::kKimiK2:
      return "kimi_k2";
    case ReplyFormat::kGptOss:
      return "gpt-oss";
  }
  return "plain";
}

ReplyFormat DetectReplyFormat(std::string_view source) {
  // Most specific first: Kimi's thinking templates also write <think>.
  if (Contains(source, kHarmonyChannel) && Contains(source, kHarmonyMessage)) {
    return ReplyFormat::kGptOss;
  }
  if (Contains(source, kKimiSectionOpen) || Contains(source, "<|im_middle|>")) {
    return ReplyFormat::kKimiK2;
  }
  if (Contains(source, kDsCallOpen) || Contains(source, "<｜Assistant｜>")) {
    return ReplyFormat::kDeepSeekV3;
  }
  if (Contains(source, kQwenCallOpen) || Contains(source, kThinkClose)) {
    return ReplyFormat::kQwen3;
  }
  return ReplyFormat::kPlain;
}

bool ReplyStartsInReasoning(ReplyFormat format, std::string_view prompt) {
  prompt = prompt.substr(0, prompt.find_last_not_of(kSpace) + 1);
  switch (format) {
    case ReplyFormat::kQwen3:
    case ReplyFormat::kDeepSeekV3:
    case ReplyFormat::kKimiK2:
      return prompt.ends_with(kThinkOpen);
    case ReplyFormat::kGptOss:
      return prompt.ends_with("<|channel|>analysis<|message|>");
    case ReplyFormat::kPlain:
      return false;
  }
  return false;
}

void Reply::Append(const ReplyDelta& delta) {
  content += delta.content;
  reasoning_content += delta.reasoning;
  tool_calls.insert(tool_calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
  malformed_tool_calls += delta.malformed_tool_calls;
}

nlohmann::json Reply::ToMessageJson() const {
  nlohmann::json message = {{"role", "assistant"}};
  message["content"] =
      content.empty() && !tool_calls.empty() ? nlohmann::json(nullptr) : nlohmann::json(content);
  if (!reasoning_content.empty()) message["reasoning_content"] = reasoning_content;
  if (!tool_calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const ToolCall& call : tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

ReplyParser::ReplyParser(ReplyFormat format, ReplyParserOptions options)
    : format_(format), options_(options) {
  const bool thinks = format == ReplyFormat::kQwen3 || format == ReplyFormat::kDeepSeekV3 ||
                      format == ReplyFormat::kKimiK2;
  think_allowed_ = thinks && !options.starts_in_reasoning;
  if (format == ReplyFormat::kGptOss) {
    // The generation prompt ends with "<|start|>assistant": a header follows.
    state_ = State::kHeader;
    if (options.starts_in_reasoning) {
      state_ = State::kBody;
      body_kind_ = BodyKind::kReasoning;
    }
  } else {
    state_ = thinks && options.starts_in_reasoning ? State::kReasoning : State::kContent;
  }
}

ReplyDelta ReplyParser::Push(std::string_view piece) {
  ReplyDelta delta;
  buffer_.append(piece);
  Run(/*final=*/false, &delta);
  return delta;
}

ReplyDelta ReplyParser::Finish() {
  ReplyDelta delta;
  Run(/*final=*/true, &delta);
  switch (state_) {
    case State::kToolCall:
      FinishCall("", &delta);  // cut short: complete only if its JSON is
      break;
    case State::kBody:
      if (body_kind_ == BodyKind::kToolCall) FinishCall("", &delta);
      break;
    case State::kHeader:
      KeepStrayHeader(&delta);
      break;
    default:
      break;
  }
  EndStretches();
  state_ = State::kContent;
  return delta;
}

std::vector<ReplyParser::Marker> ReplyParser::Markers() const {
  switch (format_) {
    case ReplyFormat::kPlain:
      return {};
    case ReplyFormat::kQwen3:
      switch (state_) {
        case State::kContent:
          return {{kQwenCallOpen, Action::kCallOpen}};
        case State::kReasoning:
          return {{kThinkClose, Action::kThinkClose}};
        case State::kToolCall:
          return {{kQwenCallClose, Action::kCallClose}};
        default:
          return {};
      }
    case ReplyFormat::kDeepSeekV3:
      switch (state_) {
        case State::kContent:  // a bare call (no section) is taken too
          return {{kDsSectionOpen, Action::kSectionOpen}, {kDsCallOpen, Action::kCallOpen}};
        case State::kReasoning:
          return {{kThinkClose, Action::kThinkClose}};
        case State::kToolSection:
          return {{kDsCallOpen, Action::kCallOpen}, {kDsSectionClose, Action::kSectionClose}};
        case State::kToolCall:
          return {{kDsCallClose, Action::kCallClose}};
        default:
          return {};
      }
    case ReplyFormat::kKimiK2:
      switch (state_) {
        case State::kContent:
          return {{kKimiSectionOpen, Action::kSectionOpen}, {kKimiCallOpen, Action::kCallOpen}};
        case State::kReasoning:  // K2 Thinking may call a tool without closing </think>
          return {{kThinkClose, Action::kThinkClose}, {kKimiSectionOpen, Action::kSectionOpen}};
        case State::kToolSection:
          return {{kKimiCallOpen, Action::kCallOpen}, {kKimiSectionClose, Action::kSectionClose}};
        case State::kToolCall:
          return {{kKimiCallClose, Action::kCallClose}};
        default:
          return {};
      }
    case ReplyFormat::kGptOss:
      switch (state_) {
        case State::kHeader:
          return {{kHarmonyMessage, Action::kMessage},
                  {kHarmonyStart, Action::kStart},
                  {kHarmonyEnd, Action::kEnd}};
        case State::kBody:
          return {{kHarmonyEnd, Action::kEnd},
                  {kHarmonyCall, Action::kEnd},
                  {kHarmonyReturn, Action::kEnd},
                  {kHarmonyStart, Action::kStart}};
        case State::kBetween:
          return {{kHarmonyStart, Action::kStart}, {kHarmonyChannel, Action::kChannel}};
        default:
          return {};
      }
  }
  return {};
}

void ReplyParser::Run(bool final, ReplyDelta* out) {
  for (;;) {
    if (state_ == State::kContent && think_allowed_) {
      // "<think>" opens reasoning only as the first thing in the reply.
      const size_t first = buffer_.find_first_not_of(kSpace);
      if (first == std::string::npos) {
        if (final) buffer_.clear();
        return;  // only spaces so far: wait
      }
      const std::string_view rest = std::string_view(buffer_).substr(first);
      if (rest.starts_with(kThinkOpen)) {
        buffer_.erase(0, first + kThinkOpen.size());
        think_allowed_ = false;
        state_ = State::kReasoning;
        continue;
      }
      if (!final && kThinkOpen.starts_with(rest)) return;  // "<thi": wait
      think_allowed_ = false;
    }
    const std::vector<Marker> markers = Markers();
    size_t best = std::string::npos;
    const Marker* hit = nullptr;
    for (const Marker& marker : markers) {
      const size_t at = buffer_.find(marker.text);
      if (at < best) {
        best = at;
        hit = &marker;
      }
    }
    if (hit != nullptr) {
      Sink(std::string_view(buffer_).substr(0, best), out);
      const Marker marker = *hit;
      buffer_.erase(0, best + marker.text.size());
      OnMarker(marker, out);
      continue;
    }
    size_t hold = 0;
    if (!final) {
      hold = IncompleteUtf8Tail(buffer_);
      for (const Marker& marker : markers) {
        hold = std::max(hold, MarkerPrefixTail(buffer_, marker.text));
      }
    }
    Sink(std::string_view(buffer_).substr(0, buffer_.size() - hold), out);
    buffer_.erase(0, buffer_.size() - hold);
    return;
  }
}

void ReplyParser::Sink(std::string_view text, ReplyDelta* out) {
  if (text.empty()) return;
  if (format_ == ReplyFormat::kPlain) {
    out->content.append(text);
    return;
  }
  switch (state_) {
    case State::kContent:
    case State::kToolSection:  // stray text between calls: the model's, keep it
    case State::kBetween:
      Emit(text, &out->content, &content_stretch_);
      break;
    case State::kReasoning:
      Emit(text, &out->reasoning, &reasoning_stretch_);
      break;
    case State::kToolCall:
      call_body_.append(text);
      break;
    case State::kHeader:
      header_.append(text);
      break;
    case State::kBody:
      switch (body_kind_) {
        case BodyKind::kContent:
          Emit(text, &out->content, &content_stretch_);
          break;
        case BodyKind::kReasoning:
          Emit(text, &out->reasoning, &reasoning_stretch_);
          break;
        case BodyKind::kToolCall:
          call_body_.append(text);
          break;
      }
      break;
  }
}

void ReplyParser::Emit(std::string_view text, std::string* channel, Stretch* stretch) {
  if (!stretch->started) {
    const size_t first = text.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    stretch->started = true;
  }
  // Spaces at the end wait for the next text: dropped if a marker follows.
  const size_t last = text.find_last_not_of(kSpace);
  if (last == std::string_view::npos) {
    stretch->pending_space.append(text);
    return;
  }
  channel->append(stretch->pending_space);
  stretch->pending_space.clear();
  channel->append(text.substr(0, last + 1));
  stretch->pending_space.assign(text.substr(last + 1));
}

void ReplyParser::EndStretches() {
  content_stretch_ = Stretch();
  reasoning_stretch_ = Stretch();
}

void ReplyParser::OnMarker(const Marker& marker, ReplyDelta* out) {
  EndStretches();
  switch (marker.action) {
    case Action::kThinkClose:
      state_ = State::kContent;
      break;
    case Action::kSectionOpen:
      in_section_ = true;
      state_ = State::kToolSection;
      break;
    case Action::kSectionClose:
      in_section_ = false;
      state_ = State::kContent;
      break;
    case Action::kCallOpen:
      call_open_.assign(marker.text);
      call_body_.clear();
      state_ = State::kToolCall;
      break;
    case Action::kCallClose:
      FinishCall(marker.text, out);
      state_ = in_section_ ? State::kToolSection : State::kContent;
      break;
    case Action::kMessage:
      OpenHarmonyBody();
      break;
    case Action::kStart:
    case Action::kEnd:
      if (state_ == State::kHeader) KeepStrayHeader(out);
      if (state_ == State::kBody && body_kind_ == BodyKind::kToolCall) {
        FinishCall(marker.action == Action::kEnd ? marker.text : "", out);
      }
      // The header keeps its <|start|> so a malformed call is kept verbatim.
      header_ = marker.action == Action::kStart ? std::string(kHarmonyStart) : std::string();
      state_ = marker.action == Action::kStart ? State::kHeader : State::kBetween;
      break;
    case Action::kChannel:
      header_.assign(marker.text);
      state_ = State::kHeader;
      break;
  }
}

void ReplyParser::KeepStrayHeader(ReplyDelta* out) {
  // A header cut short (max_tokens) is dropped; text with no harmony in it
  // at all (a model ignoring the format) is the model's answer.
  const std::string_view header = Trim(header_);
  if (!header.empty() && !Contains(header, "<|") && !Contains(header, "to=") &&
      !header.starts_with("assistant")) {
    Emit(header, &out->content, &content_stretch_);
    EndStretches();
  }
  header_.clear();
}

void ReplyParser::OpenHarmonyBody() {
  // header_: e.g. "assistant<|channel|>commentary to=functions.f <|constrain|>json"
  // or " to=functions.f<|channel|>commentary json".
  const std::string_view header = header_;
  auto word_after = [&](std::string_view key) -> std::string_view {
    const size_t at = header.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = header.substr(at + key.size());
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(' ')));
    return rest.substr(0, rest.find_first_of(" \t\r\n<"));
  };
  const std::string_view channel = word_after(kHarmonyChannel);
  const std::string_view recipient = word_after("to=");
  if (!recipient.empty()) {
    body_kind_ = BodyKind::kToolCall;
    recipient_.assign(recipient);
    call_open_ = header_ + std::string(kHarmonyMessage);
    call_body_.clear();
  } else if (channel == "analysis") {
    body_kind_ = BodyKind::kReasoning;
  } else {
    body_kind_ = BodyKind::kContent;  // final, and commentary preambles
  }
  header_.clear();
  state_ = State::kBody;
}

bool ReplyParser::ParseCall(ToolCall* call) const {
  const std::string_view body = call_body_;
  switch (format_) {
    case ReplyFormat::kQwen3: {
      // {"name": N, "arguments": A}; A an object, or a JSON text in a string.
      const OrderedJson value = OrderedJson::parse(Trim(body), nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded() || !value.is_object()) return false;
      const auto name = value.find("name");
      if (name == value.end() || !name->is_string()) return false;
      call->name = name->get<std::string>();
      const auto arguments = value.find("arguments");
      if (arguments == value.end()) {
        call->arguments = "{}";
      } else if (arguments->is_string()) {
        if (!CompactJson(arguments->get<std::string>(), &call->arguments)) return false;
      } else {
        call->arguments = arguments->dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
      }
      break;
    }
    case ReplyFormat::kDeepSeekV3: {
      const size_t sep = body.find(kDsSep);
      if (sep == std::string_view::npos) return false;
      const std::string_view before = Trim(body.substr(0, sep));
      std::string_view after = body.substr(sep + kDsSep.size());
      if (before == "function") {  // V3/R1: function<sep>NAME\n```json\nARGS\n```
        after.remove_prefix(std::min(after.size(), after.find_first_not_of(kSpace)));
        const size_t newline = after.find('\n');
        if (newline == std::string_view::npos) return false;
        call->name.assign(Trim(after.substr(0, newline)));
        after.remove_prefix(newline + 1);
      } else {  // V3.1: NAME<sep>ARGS
        call->name.assign(before);
      }
      if (call->name.empty() || !CompactJson(StripFence(after), &call->arguments)) return false;
      break;
    }
    case ReplyFormat::kKimiK2: {
      // functions.NAME:IDX<|tool_call_argument_begin|>ARGS; the id is the model's.
      const size_t sep = body.find(kKimiArgs);
      if (sep == std::string_view::npos) return false;
      const std::string_view id = Trim(body.substr(0, sep));
      std::string_view name = id;
      if (name.starts_with("functions.")) name.remove_prefix(10);
      const size_t colon = name.rfind(':');
      if (colon != std::string_view::npos) name = name.substr(0, colon);
      if (name.empty()) return false;
      call->id.assign(id);
      call->name.assign(name);
      if (!CompactJson(Trim(body.substr(sep + kKimiArgs.size())), &call->arguments)) return false;
      break;
    }
    case ReplyFormat::kGptOss: {
      std::string_view name = recipient_;
      if (name.starts_with("functions.")) name.remove_prefix(10);
      if (name.empty()) return false;
      call->name.assign(name);
      if (!CompactJson(Trim(body), &call->arguments)) return false;
      break;
    }
    case ReplyFormat::kPlain:
      return false;
  }
  if (call->id.empty()) call->id = MakeCallId(options_.call_id_seed, calls_);
  return true;
}

void ReplyParser::FinishCall(std::string_view close_marker, ReplyDelta* out) {
  ToolCall call;
  if (ParseCall(&call)) {
    out->tool_calls.push_back(std::move(call));
    ++calls_;
  } else {
    // Malformed: the model's text, markers and all, as content (see ReplyDelta).
    EndStretches();
    std::string raw = call_open_ + call_body_ + std::string(close_marker);
    Emit(raw, &out->content, &content_stretch_);
    EndStretches();
    ++out->malformed_tool_calls;
  }
  call_open_.clear();
  call_body_.clear();
  recipient_.clear();
}

Reply ParseReply(ReplyFormat format, std::string_view text, ReplyParserOptions options) {
  ReplyParser parser(format, options);
  Reply reply;
  reply.Append(parser.Push(text));
  reply.Append(parser.Finish());
  return reply;
}

}  // namespace warp::computed::serve
