#include "computed/text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace warp::text {
namespace {

std::string ErrorMessage(int error_code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// The JIT's default 32 KiB machine stack overflows on long whitespace runs
// with `\s+(?!\S)`; each thread gets a growable one, made on first use.
// Thread-compatible: one per thread (thread_local).
class ThreadMatchContext {
 public:
  ThreadMatchContext()
      : context_(pcre2_match_context_create(nullptr)),
        stack_(pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr)) {
    if (context_ != nullptr && stack_ != nullptr) {
      pcre2_jit_stack_assign(context_, nullptr, stack_);
    }
  }
  ~ThreadMatchContext() {
    pcre2_jit_stack_free(stack_);
    pcre2_match_context_free(context_);
  }
  pcre2_match_context* get() { return context_; }

 private:
  pcre2_match_context* context_;
  pcre2_jit_stack* stack_;
};

pcre2_match_context* MatchContext() {
  thread_local ThreadMatchContext context;
  return context.get();
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern,
                                                      RegexDialect dialect) {
  absl::StatusOr<std::string> translated = TranslateRegex(pattern, dialect);
  if (!translated.ok()) return translated.status();
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  options |= dialect == RegexDialect::kOniguruma ? PCRE2_MULTILINE : PCRE2_DOLLAR_ENDONLY;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated->data()), translated->size(), options,
                    &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    std::string where = absl::StrCat("at offset ", error_offset);
    if (*translated != pattern) {
      absl::StrAppend(&where, " of its PCRE2 translation \"", *translated, "\"");
    }
    return absl::InvalidArgumentError(absl::StrCat("regex \"", std::string(pattern),
                                                   "\": ", ErrorMessage(error_code), " ", where));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
  return std::unique_ptr<Regex>(new Regex(std::string(pattern), code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

absl::StatusOr<std::vector<Match>> Regex::FindAll(std::string_view text) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(code, nullptr));
  std::vector<Match> matches;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data.get(),
                               MatchContext());
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "regex \"", pattern_, "\": matching failed at byte ", start, ": ", ErrorMessage(rc)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const Match match{ovector[0], ovector[1]};
    matches.push_back(match);
    if (match.end > match.begin) {
      start = match.end;
      continue;
    }
    if (match.end >= text.size()) break;
    start = match.end + 1;  // step over one whole character after an empty match
    while (start < text.size() && utf8::IsContinuation(text[start])) ++start;
  }
  return matches;
}

}  // namespace warp::text
