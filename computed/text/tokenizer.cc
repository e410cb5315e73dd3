// Tokenizer::Load: reads the file and picks the format from its content.

#include "computed/text/tokenizer.h"

#include "absl/strings/ascii.h"
#include "common/io/file.h"
#include "common/status.h"
#include "computed/text/hf_tokenizer.h"
#include "computed/text/json_fields.h"
#include "computed/text/tiktoken.h"
#include "computed/text/tokenizer_json.h"

namespace warp::text {

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::filesystem::path& path,
                                                           const LoadOptions& options) {
  WARP_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  std::string_view content = text;
  if (content.starts_with("\xEF\xBB\xBF")) content.remove_prefix(3);  // a UTF-8 BOM
  while (!content.empty() && absl::ascii_isspace(content.front())) content.remove_prefix(1);
  if (content.starts_with('{')) {  // tokenizer.json; tiktoken lines never start with '{'
    WARP_ASSIGN_OR_RETURN(TokenizerJson json, ParseTokenizerJson(text, path.string()));
    WARP_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> tokenizer,
                          HfTokenizer::Create(std::move(json), path.string()));
    return tokenizer;
  }
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<TiktokenTokenizer> tokenizer,
                        TiktokenTokenizer::Load(path, text, options));
  return tokenizer;
}

}  // namespace warp::text
