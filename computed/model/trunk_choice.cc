#include "computed/model/trunk_choice.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace warp::computed {
namespace {

// `format` where `shape` holds whole blocks of it, else bf16 (as convert has
// always stored a q8 trunk's odd rows).
TensorFormat OrBf16(TensorFormat format, const std::vector<uint64_t>& shape) {
  return ShapeProblem(format, shape).empty() ? format : TensorFormat::kBF16;
}

}  // namespace

absl::StatusOr<TrunkChoice> TrunkChoice::Parse(std::string_view text) {
  TrunkChoice choice;
  choice.text_ = std::string(text);
  if (text == "native") return choice;
  if (text == "bf16" || text == "q8" || text == "q4") {
    choice.mode_ = Mode::kUniform;
    choice.uniform_ = text == "bf16" ? TensorFormat::kBF16
                      : text == "q8" ? TensorFormat::kQ8B32
                                     : TensorFormat::kQ4B32;
    return choice;
  }
  if (text == "mixed") {
    choice.mode_ = Mode::kMixed;
    choice.kinds_.assign(std::begin(kMixedEightBitKinds), std::end(kMixedEightBitKinds));
    return choice;
  }
  for (const auto& [prefix, mode] : {std::pair{std::string_view("q4:"), Mode::kQ4Kinds},
                                     std::pair{std::string_view("mixed:"), Mode::kMixed}}) {
    if (!text.starts_with(prefix) || text.size() == prefix.size()) continue;
    choice.mode_ = mode;
    for (size_t begin = prefix.size(); begin <= text.size();) {
      const size_t comma = std::min(text.find(',', begin), text.size());
      const std::string_view name = text.substr(begin, comma - begin);
      const std::optional<TrunkKind> kind = ParseTrunkKind(name);
      if (!kind || *kind == TrunkKind::kOther) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--trunk ", std::string(text), ": unknown kind \"", std::string(name),
            "\" (embedding, head, attention, indexer, linear_attention, dense_mlp, "
            "shared_experts, latent_projection)"));
      }
      choice.kinds_.push_back(*kind);
      begin = comma + 1;
    }
    return choice;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--trunk ", std::string(text), ": expected ", std::string(kTrunkChoices)));
}

TensorFormat TrunkChoice::FormatOf(TrunkKind kind, TensorFormat native,
                                   const std::vector<uint64_t>& shape) const {
  switch (mode_) {
    case Mode::kNative:
      return native;
    case Mode::kUniform:
      return OrBf16(uniform_, shape);
    case Mode::kMixed: {
      const bool eight = std::find(kinds_.begin(), kinds_.end(), kind) != kinds_.end();
      if (!eight) return OrBf16(TensorFormat::kQ4B32, shape);
      return IsTiledFp8(native) ? native : OrBf16(TensorFormat::kQ8B32, shape);
    }
    case Mode::kQ4Kinds:
      return std::find(kinds_.begin(), kinds_.end(), kind) != kinds_.end()
                 ? OrBf16(TensorFormat::kQ4B32, shape)
                 : native;
  }
  return native;
}

}  // namespace warp::computed
