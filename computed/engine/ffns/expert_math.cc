#include "computed/engine/ffns/expert_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status.h"
#include "computed/engine/linear.h"
#include "computed/engine/ops.h"

namespace warp::computed {
namespace {

absl::Status NotInRecords(const BankEntry& bank, std::string_view name) {
  return absl::FailedPreconditionError(
      absl::StrCat("bank of layer ", bank.layer, ": records hold no ", std::string(name)));
}

// One matrix of a bank's records, and its codebook when its format has one.
struct BankMatrix {
  const TensorEntry* entry = nullptr;
  const Vq3rCodebook* codebook = nullptr;

  kernels::MatrixView View(const ExpertRecord& record) const {
    const std::byte* base = record.bytes().data();
    return kernels::MatrixView{.format = entry->format,
                               .rows = entry->shape[0],
                               .cols = entry->shape[1],
                               .data = base + entry->data.offset,
                               .scale = entry->scale ? base + entry->scale->offset : nullptr,
                               .codebook = codebook};
  }
};

absl::StatusOr<BankMatrix> Matrix(const BankEntry& bank, const Codebooks& codebooks,
                                  std::string_view name) {
  for (const TensorEntry& m : bank.matrices) {
    if (m.name != name) continue;
    BankMatrix matrix{.entry = &m};
    if (NeedsCodebook(m.format)) {
      // Container::Open refuses a container whose vq3r matrix has no codebook.
      matrix.codebook = codebooks.Find(bank.layer, m.name);
      WARP_CHECK(matrix.codebook != nullptr);
    }
    return matrix;
  }
  return NotInRecords(bank, name);
}

absl::StatusOr<const TensorEntry*> Vector(const BankEntry& bank, std::string_view name) {
  for (const TensorEntry& m : bank.matrices) {
    if (m.name != name) continue;
    if (m.shape.size() != 1 || m.format != TensorFormat::kF32) {
      return absl::FailedPreconditionError(absl::StrCat(
          "bank of layer ", bank.layer, ": record tensor ", std::string(name), " must be f32 1-D"));
    }
    return &m;
  }
  return NotInRecords(bank, name);
}

const float* RecordVector(const ExpertRecord& record, const TensorEntry& vector) {
  return reinterpret_cast<const float*>(record.bytes().data() + vector.data.offset);
}

// down(act(gate x, up x)), act SiLU or SiTU.
class SwiGluExpert : public ExpertMath {
 public:
  SwiGluExpert(BankMatrix gate, BankMatrix up, BankMatrix down, const GluActivation& act,
               ThreadPool& pool)
      : gate_(gate), up_(up), down_(down), act_(act), pool_(pool) {}

  void Run(const ExpertRecord& record, std::span<const float> xs, uint32_t m,
           std::span<float> out) const override {
    const uint64_t inter = gate_.entry->shape[0];
    std::vector<float> gate(m * inter), up(m * inter);
    Linear(pool_, gate_.View(record), xs.data(), m, gate.data());
    Linear(pool_, up_.View(record), xs.data(), m, up.data());
    GluMul(act_, gate, up);
    Linear(pool_, down_.View(record), gate.data(), m, out.data());
  }

 private:
  BankMatrix gate_, up_, down_;
  GluActivation act_;
  ThreadPool& pool_;
};

// gpt-oss: gate_up rows interleaved (gate j = row 2j, up j = row 2j + 1), both
// biased; gate <= limit, |up| <= limit; down((up + 1) * gate * sigmoid(1.702 gate)) + bias.
class ClampedSwiGluExpert : public ExpertMath {
 public:
  static constexpr float kAlpha = 1.702f;

  ClampedSwiGluExpert(BankMatrix gate_up, const TensorEntry& gate_up_bias, BankMatrix down,
                      const TensorEntry& down_bias, float limit, ThreadPool& pool)
      : gate_up_(gate_up),
        gate_up_bias_(gate_up_bias),
        down_(down),
        down_bias_(down_bias),
        limit_(limit),
        pool_(pool) {}

  void Run(const ExpertRecord& record, std::span<const float> xs, uint32_t m,
           std::span<float> out) const override {
    const uint64_t inter = down_.entry->shape[1], hidden = down_.entry->shape[0];
    std::vector<float> gate_up(m * 2 * inter), act(m * inter);
    Linear(pool_, gate_up_.View(record), xs.data(), m, gate_up.data());
    const float* gate_up_bias = RecordVector(record, gate_up_bias_);
    for (uint32_t t = 0; t < m; ++t) {
      const float* row = &gate_up[t * 2 * inter];
      for (uint64_t j = 0; j < inter; ++j) {
        const float gate = std::min(row[2 * j] + gate_up_bias[2 * j], limit_);
        const float up = std::clamp(row[2 * j + 1] + gate_up_bias[2 * j + 1], -limit_, limit_);
        const float glu = gate / (1.0f + std::exp(-gate * kAlpha));
        act[t * inter + j] = (up + 1.0f) * glu;
      }
    }
    Linear(pool_, down_.View(record), act.data(), m, out.data());
    const float* down_bias = RecordVector(record, down_bias_);
    for (uint32_t t = 0; t < m; ++t) {
      for (uint64_t i = 0; i < hidden; ++i) out[t * hidden + i] += down_bias[i];
    }
  }

 private:
  BankMatrix gate_up_;
  const TensorEntry& gate_up_bias_;
  BankMatrix down_;
  const TensorEntry& down_bias_;
  float limit_;
  ThreadPool& pool_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExpertMath>> ExpertMath::Create(const FfnPlan& plan,
                                                               const BankEntry& bank,
                                                               const Codebooks& codebooks,
                                                               ThreadPool& pool) {
  switch (plan.activation) {
    case ExpertActivation::kSwiGlu: {
      WARP_ASSIGN_OR_RETURN(BankMatrix gate, Matrix(bank, codebooks, "gate_proj"));
      WARP_ASSIGN_OR_RETURN(BankMatrix up, Matrix(bank, codebooks, "up_proj"));
      WARP_ASSIGN_OR_RETURN(BankMatrix down, Matrix(bank, codebooks, "down_proj"));
      return std::make_unique<SwiGluExpert>(gate, up, down, plan.glu, pool);
    }
    case ExpertActivation::kClampedSwiGlu: {
      WARP_ASSIGN_OR_RETURN(BankMatrix gate_up, Matrix(bank, codebooks, "gate_up_proj"));
      WARP_ASSIGN_OR_RETURN(const TensorEntry* gate_up_bias, Vector(bank, "gate_up_proj_bias"));
      WARP_ASSIGN_OR_RETURN(BankMatrix down, Matrix(bank, codebooks, "down_proj"));
      WARP_ASSIGN_OR_RETURN(const TensorEntry* down_bias, Vector(bank, "down_proj_bias"));
      return std::make_unique<ClampedSwiGluExpert>(gate_up, *gate_up_bias, down, *down_bias,
                                                   plan.swiglu_limit, pool);
    }
  }
  return absl::InternalError("unknown expert activation");
}

}  // namespace warp::computed
