#include "common/compute/expert_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/compute/glu.h"
#include "common/compute/linear.h"
#include "common/compute/record_matrix.h"
#include "common/status.h"

namespace warp {
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

// The record bytes that must be in before rows [0, rows) of `m` can be
// computed: its data's rows are row-major, and its scales (if apart) whole.
uint64_t BytesForRows(const BankMatrix& m, uint64_t rows) {
  const TensorEntry& entry = *m.entry;
  const uint64_t row_bytes = entry.data.bytes / entry.shape[0];
  const uint64_t data_end = entry.data.offset + rows * row_bytes;
  return entry.scale ? std::max(data_end, entry.scale->offset + entry.scale->bytes) : data_end;
}

// The rows of `m` that `landed` bytes hold whole.
uint64_t RowsIn(const BankMatrix& m, uint64_t landed) {
  const TensorEntry& entry = *m.entry;
  if (entry.scale && landed < entry.scale->offset + entry.scale->bytes) return 0;
  if (landed <= entry.data.offset) return 0;
  const uint64_t row_bytes = entry.data.bytes / entry.shape[0];
  return std::min(entry.shape[0], (landed - entry.data.offset) / row_bytes);
}

// Computes every row of `m` through `linear`: each time, every row landed
// (a read's piece of rows, as pieces land), once at least a pool grain more
// has; false if the read ended first.
bool RowsAsTheyLand(const BankMatrix& m, RowLinear& linear, ExpertMath::WaitForBytes wait) {
  constexpr uint64_t kMinRows = 16;
  const uint64_t rows = m.entry->shape[0];
  uint64_t done = 0;
  while (done < rows) {
    const uint64_t want = BytesForRows(m, std::min(rows, done + kMinRows));
    const uint64_t landed = wait(want);
    if (landed < want) return false;
    const uint64_t ready = RowsIn(m, landed);
    linear.Rows(done, ready);
    done = ready;
  }
  return true;
}

// A record's rows are row-major with whole bytes a row: true of every format
// (docs/FORMAT.md); checked, so that a new one that is not is computed whole.
bool RowMajor(const BankMatrix& m) {
  const TensorEntry& entry = *m.entry;
  return entry.shape.size() == 2 && entry.shape[0] > 0 && entry.data.bytes % entry.shape[0] == 0;
}

const float* RecordVector(const ExpertRecord& record, const TensorEntry& vector) {
  return reinterpret_cast<const float*>(record.bytes().data() + vector.data.offset);
}

// down(act(gate x, up x)), act SiLU or SiTU.
class SwiGluExpert : public ExpertMath {
 public:
  SwiGluExpert(BankMatrix gate, BankMatrix up, BankMatrix down, const GluActivation& act,
               ComputeContext& compute)
      : gate_(gate), up_(up), down_(down), act_(act), compute_(compute) {}

  void Run(const ExpertRecord& record, std::span<const float> xs, uint32_t m,
           std::span<float> out) const override {
    const uint64_t inter = gate_.entry->shape[0];
    std::vector<float> gate(m * inter), up(m * inter);
    Linear(compute_, gate_.View(record), xs.data(), m, gate.data());
    Linear(compute_, up_.View(record), xs.data(), m, up.data());
    GluMul(act_, gate, up);
    Linear(compute_, down_.View(record), gate.data(), m, out.data());
  }

  bool RunLanding(const LandingRecord& landing, std::span<const float> xs, uint32_t m,
                  std::span<float> out, WaitForBytes wait) const override {
    if (!RowMajor(gate_) || !RowMajor(up_) || !RowMajor(down_)) {
      return ExpertMath::RunLanding(landing, xs, m, out, wait);
    }
    const ExpertRecord record{.data = landing.data(), .record_bytes = landing.data().size()};
    const uint64_t inter = gate_.entry->shape[0];
    std::vector<float> gate(m * inter), up(m * inter);
    // gate and up in the order they lie in the record.
    const bool up_first = up_.entry->data.offset < gate_.entry->data.offset;
    for (const bool is_up : {up_first, !up_first}) {
      const BankMatrix& matrix = is_up ? up_ : gate_;
      RowLinear linear(compute_, matrix.View(record), xs.data(), m, (is_up ? up : gate).data());
      if (!RowsAsTheyLand(matrix, linear, wait)) return false;
    }
    GluMul(act_, gate, up);
    RowLinear down(compute_, down_.View(record), gate.data(), m, out.data());
    return RowsAsTheyLand(down_, down, wait);
  }

 private:
  BankMatrix gate_, up_, down_;
  GluActivation act_;
  ComputeContext& compute_;
};

// gpt-oss: gate_up rows interleaved (gate j = row 2j, up j = row 2j + 1), both
// biased; gate <= limit, |up| <= limit; down((up + 1) * GptOssGlu(gate)) + bias.
class ClampedSwiGluExpert : public ExpertMath {
 public:
  ClampedSwiGluExpert(BankMatrix gate_up, const TensorEntry& gate_up_bias, BankMatrix down,
                      const TensorEntry& down_bias, float limit, ComputeContext& compute)
      : gate_up_(gate_up),
        gate_up_bias_(gate_up_bias),
        down_(down),
        down_bias_(down_bias),
        limit_(limit),
        compute_(compute) {}

  void Run(const ExpertRecord& record, std::span<const float> xs, uint32_t m,
           std::span<float> out) const override {
    std::vector<float> gate_up(m * 2 * inter()), act(m * inter());
    Linear(compute_, gate_up_.View(record), xs.data(), m, gate_up.data());
    Activate(record, gate_up, m, act);
    Linear(compute_, down_.View(record), act.data(), m, out.data());
    AddDownBias(record, m, out);
  }

  bool RunLanding(const LandingRecord& landing, std::span<const float> xs, uint32_t m,
                  std::span<float> out, WaitForBytes wait) const override {
    if (!RowMajor(gate_up_) || !RowMajor(down_)) {
      return ExpertMath::RunLanding(landing, xs, m, out, wait);
    }
    const ExpertRecord record{.data = landing.data(), .record_bytes = landing.data().size()};
    auto landed = [&](const TensorEntry& vector) {
      const uint64_t end = vector.data.offset + vector.data.bytes;
      return wait(end) >= end;
    };
    std::vector<float> gate_up(m * 2 * inter()), act(m * inter());
    RowLinear gate_up_rows(compute_, gate_up_.View(record), xs.data(), m, gate_up.data());
    if (!RowsAsTheyLand(gate_up_, gate_up_rows, wait) || !landed(gate_up_bias_)) return false;
    Activate(record, gate_up, m, act);
    RowLinear down_rows(compute_, down_.View(record), act.data(), m, out.data());
    if (!RowsAsTheyLand(down_, down_rows, wait) || !landed(down_bias_)) return false;
    AddDownBias(record, m, out);
    return true;
  }

 private:
  uint64_t inter() const { return down_.entry->shape[1]; }

  // act = (up + 1) * glu(gate) of the biased, clamped gate_up rows.
  void Activate(const ExpertRecord& record, std::span<const float> gate_up, uint32_t m,
                std::span<float> act) const {
    const uint64_t inter = this->inter();
    const float* gate_up_bias = RecordVector(record, gate_up_bias_);
    for (uint32_t t = 0; t < m; ++t) {
      const float* row = &gate_up[t * 2 * inter];
      for (uint64_t j = 0; j < inter; ++j) {
        const float gate = std::min(row[2 * j] + gate_up_bias[2 * j], limit_);
        const float up = std::clamp(row[2 * j + 1] + gate_up_bias[2 * j + 1], -limit_, limit_);
        const float glu = GptOssGlu(gate);
        act[t * inter + j] = (up + 1.0f) * glu;
      }
    }
  }

  void AddDownBias(const ExpertRecord& record, uint32_t m, std::span<float> out) const {
    const uint64_t hidden = down_.entry->shape[0];
    const float* down_bias = RecordVector(record, down_bias_);
    for (uint32_t t = 0; t < m; ++t) {
      for (uint64_t i = 0; i < hidden; ++i) out[t * hidden + i] += down_bias[i];
    }
  }

  BankMatrix gate_up_;
  const TensorEntry& gate_up_bias_;
  BankMatrix down_;
  const TensorEntry& down_bias_;
  float limit_;
  ComputeContext& compute_;
};

}  // namespace

bool ExpertMath::RunLanding(const LandingRecord& landing, std::span<const float> xs, uint32_t m,
                            std::span<float> out, WaitForBytes wait) const {
  if (wait(landing.data().size()) < landing.data().size()) return false;
  Run(ExpertRecord{.data = landing.data(), .record_bytes = landing.data().size()}, xs, m, out);
  return true;
}

absl::StatusOr<std::unique_ptr<ExpertMath>> ExpertMath::Create(const ExpertMathSpec& spec,
                                                               const BankEntry& bank,
                                                               const Codebooks& codebooks,
                                                               ComputeContext& compute) {
  std::unique_ptr<ExpertMath> math;
  switch (spec.activation) {
    case ExpertActivation::kSwiGlu: {
      WARP_ASSIGN_OR_RETURN(BankMatrix gate, Matrix(bank, codebooks, RecordMatrix::kGate));
      WARP_ASSIGN_OR_RETURN(BankMatrix up, Matrix(bank, codebooks, RecordMatrix::kUp));
      WARP_ASSIGN_OR_RETURN(BankMatrix down, Matrix(bank, codebooks, RecordMatrix::kDown));
      math = std::make_unique<SwiGluExpert>(gate, up, down, spec.glu, compute);
      break;
    }
    case ExpertActivation::kClampedSwiGlu: {
      WARP_ASSIGN_OR_RETURN(BankMatrix gate_up, Matrix(bank, codebooks, RecordMatrix::kGateUp));
      WARP_ASSIGN_OR_RETURN(const TensorEntry* gate_up_bias,
                            Vector(bank, RecordMatrix::kGateUpBias));
      WARP_ASSIGN_OR_RETURN(BankMatrix down, Matrix(bank, codebooks, RecordMatrix::kDown));
      WARP_ASSIGN_OR_RETURN(const TensorEntry* down_bias, Vector(bank, RecordMatrix::kDownBias));
      math = std::make_unique<ClampedSwiGluExpert>(gate_up, *gate_up_bias, down, *down_bias,
                                                   spec.swiglu_limit, compute);
      break;
    }
  }
  if (math == nullptr) return absl::InternalError("unknown expert activation");
  math->spec_ = spec;
  return math;
}

}  // namespace warp
