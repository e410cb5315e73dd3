#include "computed/model/release_formats.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;

// The object of `config` that holds `key`: config.json itself, or a
// multimodal release's text_config; nullptr if neither does.
const json* Holder(const json& config, std::string_view key) {
  if (config.contains(key)) return &config;
  auto text = config.find("text_config");
  if (text != config.end() && text->is_object() && text->contains(key)) return &*text;
  return nullptr;
}

absl::Status Refuse(std::string_view source, std::string_view field, const json& value,
                    std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": ", std::string(field),
                                                 " ", value.dump(), ": ", std::string(why)));
}

// The torch dtype of the release's unquantized tensors: bf16 when silent or
// another name ("auto"); it only sizes a plan, the converter reads each tensor's own.
TensorFormat DenseFormat(const json& config) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    const json* holder = Holder(config, key);
    if (holder == nullptr) continue;
    const json& value = (*holder)[key];
    if (value == "float16") return TensorFormat::kF16;
    if (value == "float32") return TensorFormat::kF32;
    return TensorFormat::kBF16;
  }
  return TensorFormat::kBF16;
}

// DeepSeek V4's `expert_dtype` (top level; inside quantization_config in
// later releases): the routed experts' own format.
// fp8 experts are in the release's FP8 blocks, `fp8`.
absl::StatusOr<TensorFormat> ExpertDtype(const json& value, TensorFormat otherwise,
                                         TensorFormat fp8, std::string_view source) {
  if (value.is_null()) return otherwise;
  if (value == "fp4") return TensorFormat::kMxfp4B32;
  if (value == "fp8") return fp8;
  if (value == "bf16" || value == "bfloat16") return TensorFormat::kBF16;
  return Refuse(source, "expert_dtype", value, "expected fp4, fp8 or bf16");
}

absl::Status ReadBlockFp8(const json& q, std::string_view source, ReleaseFormats& formats) {
  if (q.contains("fmt") && q["fmt"] != "e4m3") {
    return Refuse(source, "quantization_config.fmt", q["fmt"], "WARP keeps FP8 as E4M3 only");
  }
  const json block = q.value("weight_block_size", json::array({kFp8Block128, kFp8Block128}));
  std::optional<TensorFormat> fp8;
  if (block.is_array() && block.size() == 2 && block[0].is_number_integer() &&
      block[0] == block[1] && block[0].get<int64_t>() > 0) {
    fp8 = TiledFp8Format(block[0].get<uint64_t>());
  }
  if (!fp8) {
    return Refuse(source, "quantization_config.weight_block_size", block,
                  "WARP's FP8 formats are 128x128 blocks (f8_e4m3_b128) and 32x32 blocks "
                  "(f8_e4m3_b32)");
  }
  if (q.contains("scale_fmt") && q["scale_fmt"] != "ue8m0") {
    return Refuse(source, "quantization_config.scale_fmt", q["scale_fmt"],
                  "expected ue8m0 (or none: F32 weight_scale_inv)");
  }
  formats.block_fp8 = true;
  formats.fp8 = *fp8;
  formats.experts = *fp8;
  const uint64_t tile = TraitsOf(*fp8).scale.rows;
  formats.description = absl::StrCat("FP8 E4M3 ", tile, "x", tile, " blocks",
                                     q.contains("scale_fmt") ? " (UE8M0 scales)" : "");
  return absl::OkStatus();
}

}  // namespace

namespace {

// "a.b.c" -> {a, b, c}.
std::vector<std::string_view> DottedParts(std::string_view name) {
  std::vector<std::string_view> parts;
  for (size_t begin = 0;;) {
    const size_t dot = name.find('.', begin);
    parts.push_back(name.substr(begin, dot == std::string_view::npos ? dot : dot - begin));
    if (dot == std::string_view::npos) return parts;
    begin = dot + 1;
  }
}

}  // namespace

bool ModuleMatches(std::string_view module, std::string_view pattern) {
  // A multimodal release nests its text model under `language_model`
  // (GLM-5.3's model.language_model.layers.N, Kimi K3's language_model.),
  // while its modules_to_not_convert names the text model's modules from its
  // own root (model.layers.N): that part is not compared.
  auto text_parts = [](std::string_view name) {
    std::vector<std::string_view> parts = DottedParts(name);
    std::erase(parts, std::string_view("language_model"));
    return parts;
  };
  const std::vector<std::string_view> parts = text_parts(module);
  const std::vector<std::string_view> want = text_parts(pattern);
  for (size_t start = 0; start + want.size() <= parts.size(); ++start) {
    bool all = true;
    for (size_t i = 0; i < want.size() && all; ++i) {
      all = want[i] == "*" || want[i] == parts[start + i];
    }
    if (all) return true;
  }
  return false;
}

TensorFormat ReleaseFormats::TrunkMatrix(const ModelFamily& family, std::string_view name) const {
  if (!block_fp8 || !family.ReleaseBlockQuantizes(name)) return dense;
  const std::string_view module =
      name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
  for (const std::string& pattern : not_converted) {
    if (ModuleMatches(module, pattern)) return dense;
  }
  return fp8;
}

absl::StatusOr<ReleaseFormats> ReadReleaseFormats(const json& config, std::string_view source) {
  ReleaseFormats formats;
  formats.dense = DenseFormat(config);
  formats.experts = formats.dense;
  formats.description = std::string(TensorFormatName(formats.dense));
  const json* holder = Holder(config, "quantization_config");
  json expert_dtype = nullptr;
  if (const json* top = Holder(config, "expert_dtype")) expert_dtype = (*top)["expert_dtype"];
  if (holder != nullptr) {
    const json& q = (*holder)["quantization_config"];
    if (!q.is_object()) {
      return Refuse(source, "quantization_config", q, "expected an object");
    }
    const json method = q.value("quant_method", json());
    if (method == "fp8") {
      WARP_RETURN_IF_ERROR(ReadBlockFp8(q, source, formats));
    } else if (method == "mxfp4") {  // gpt-oss: the experts; the rest stays dense
      formats.experts = TensorFormat::kMxfp4B32;
      formats.description = "MXFP4 experts";
    } else if (method == "compressed-tensors") {
      // The format of the whole config, or of each of its groups.
      std::vector<std::pair<std::string, json>> formats_named;
      if (q.contains("format")) formats_named.emplace_back("quantization_config.format", q["format"]);
      const json groups = q.value("config_groups", json::object());
      for (auto it = groups.begin(); it != groups.end() && groups.is_object(); ++it) {
        const std::string& group = it.key();
        const json& spec = it.value();
        if (!q.contains("format") && spec.is_object()) {
          formats_named.emplace_back(
              absl::StrCat("quantization_config.config_groups.", group, ".format"),
              spec.value("format", json()));
        }
      }
      if (formats_named.empty()) formats_named.emplace_back("quantization_config.format", json());
      for (const auto& [field, format] : formats_named) {
        if (format != "mxfp4-pack-quantized") {
          return Refuse(source, field, format,
                        "WARP converts compressed-tensors mxfp4-pack-quantized only");
        }
      }
      formats.experts = TensorFormat::kMxfp4B32;  // Kimi K3: the experts; the rest stays dense
      formats.description = "compressed-tensors MXFP4 experts";
    } else {
      return Refuse(source, "quantization_config.quant_method", method,
                    "WARP converts fp8 (block E4M3), mxfp4 and compressed-tensors "
                    "mxfp4-pack-quantized");
    }
    for (const json& module : q.value("modules_to_not_convert", json::array())) {
      if (module.is_string()) formats.not_converted.push_back(module.get<std::string>());
    }
    if (q.contains("expert_dtype")) expert_dtype = q["expert_dtype"];
  }
  formats.declares_experts = holder != nullptr || !expert_dtype.is_null();
  WARP_ASSIGN_OR_RETURN(formats.experts,
                        ExpertDtype(expert_dtype, formats.experts, formats.fp8, source));
  if (!expert_dtype.is_null()) {
    absl::StrAppend(&formats.description, ", experts ",
                    std::string(TensorFormatName(formats.experts)));
  }
  return formats;
}

}  // namespace warp::computed
