#include "expertd/compute_handler.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/compute/compute_arrivals.h"
#include "common/compute/expert_math.h"
#include "common/compute/record_matrix.h"
#include "common/status.h"
#include "common/store/read_window.h"
#include "common/wire/proto_convert.h"

namespace warp::expertd {
namespace {

// The width of a bank's expert rows: its down matrix's outputs, which are
// also what its gate and up (or gate_up) take.
uint64_t ExpertWidth(const BankEntry& bank) {
  for (const TensorEntry& m : bank.matrices) {
    if (m.name == RecordMatrix::kDown && m.shape.size() == 2) return m.shape[0];
  }
  return 0;
}

// The rows of `request` that `expert` takes, gathered: [rows][width].
std::vector<float> GatherRows(const v1::ComputeRequest& request, const v1::ExpertRows& expert) {
  const uint64_t width = request.width();
  const char* rows = request.rows().data();
  std::vector<float> xs(expert.rows_size() * width);
  for (int i = 0; i < expert.rows_size(); ++i) {
    std::memcpy(&xs[i * width], rows + uint64_t{expert.rows(i)} * width * sizeof(float),
                width * sizeof(float));
  }
  return xs;
}

}  // namespace

ComputeHandler::ComputeHandler(ExpertStore& store, const Options& options)
    : store_(store),
      options_(options),
      pool_(options.threads),
      plain_(pool_, Arithmetic{.q8_activations = false}),
      q8_(pool_, Arithmetic{.q8_activations = true}) {}

uint64_t ComputeHandler::max_request_bytes() const {
  // The widest rows, and expert lists of at most every row of every expert
  // (5 bytes a varint).
  uint64_t width = 0, experts = 0;
  for (const BankEntry& bank : store_.container().manifest().banks) {
    width = std::max(width, ExpertWidth(bank));
    experts = std::max<uint64_t>(experts, bank.num_experts);
  }
  return std::max<uint64_t>(4 << 20,
                            options_.max_rows * (width * sizeof(float) + 5 * experts) + (1 << 20));
}

const BankEntry* ComputeHandler::Bank(uint32_t layer) const {
  for (const BankEntry& bank : store_.container().manifest().banks) {
    if (bank.layer == layer) return &bank;
  }
  return nullptr;
}

absl::Status ComputeHandler::Check(const v1::ComputeRequest& request, const BankEntry* bank) const {
  const auto invalid = [&](auto&&... pieces) {
    return absl::InvalidArgumentError(absl::StrCat("compute request: ", pieces...));
  };
  if (bank == nullptr) {
    return invalid("layer ", request.layer(), " has no routed experts in this model");
  }
  const uint64_t width = ExpertWidth(*bank);
  if (request.width() != width) {
    return invalid("width ", request.width(), ": layer ", bank->layer, "'s experts take rows of ",
                   width, " floats");
  }
  if (request.num_rows() == 0 || request.num_rows() > options_.max_rows) {
    return invalid("num_rows ", request.num_rows(), ": from 1 to this daemon's max_compute_rows ",
                   options_.max_rows);
  }
  const uint64_t row_bytes = width * sizeof(float);
  if (request.rows().size() != request.num_rows() * row_bytes) {
    return invalid("rows: ", request.rows().size(), " bytes, not num_rows ", request.num_rows(),
                   " x width ", width, " x 4");
  }
  if (request.experts_size() == 0) return invalid("experts: none");
  absl::flat_hash_set<uint32_t> seen;
  for (const v1::ExpertRows& expert : request.experts()) {
    if (expert.expert() >= bank->num_experts) {
      return invalid("expert ", expert.expert(), ": layer ", bank->layer, " has ",
                     bank->num_experts, " routed experts");
    }
    if (!seen.insert(expert.expert()).second) {
      return invalid("expert ", expert.expert(), " of layer ", bank->layer, " listed twice");
    }
    if (expert.rows_size() == 0) {
      return invalid("expert ", expert.expert(), " of layer ", bank->layer, ": no rows");
    }
    for (uint32_t row : expert.rows()) {
      if (row >= request.num_rows()) {
        return invalid("expert ", expert.expert(), " of layer ", bank->layer, ": row ", row,
                       " of num_rows ", request.num_rows());
      }
    }
    if (!store_.container().RecordOffset(bank->layer, expert.expert())) {
      return absl::NotFoundError(absl::StrCat("compute request: expert ", expert.expert(),
                                              " of layer ", bank->layer,
                                              " is not held by this daemon"));
    }
  }
  return absl::OkStatus();
}

absl::Status ComputeHandler::Compute(const v1::ComputeRequest& request, Emit emit) {
  const BankEntry* bank = Bank(request.layer());
  if (absl::Status status = Check(request, bank); !status.ok()) {
    ++refused_;
    return status;
  }
  absl::StatusOr<ExpertMathSpec> spec = FromProto(request.math());
  if (!spec.ok()) {
    ++refused_;
    return absl::InvalidArgumentError(absl::StrCat("compute request: ", spec.status().message()));
  }
  absl::MutexLock turn(&turn_);
  ComputeContext& compute = request.math().q8_activations() ? q8_ : plain_;
  absl::StatusOr<std::unique_ptr<ExpertMath>> math =
      ExpertMath::Create(*spec, *bank, store_.container().codebooks(), compute);
  if (!math.ok()) {
    ++refused_;
    return absl::InvalidArgumentError(
        absl::StrCat("compute request: math: ", math.status().message()));
  }
  ++requests_;
  rows_ += request.num_rows();
  std::vector<ExpertKey> keys;
  keys.reserve(request.experts_size());
  for (const v1::ExpertRows& expert : request.experts()) {
    keys.push_back({bank->layer, expert.expert()});
  }
  // Waves of what the cache holds (common/store/read_window.h): the next
  // wave's reads fly while this one computes.
  const uint64_t slots = store_.slot_bytes() == 0 ? 0 : store_.cache_bytes() / store_.slot_bytes();
  const uint64_t wave = keys.size() <= slots || slots == 0 ? keys.size() : WaveRecords(slots);
  const auto read = [&](size_t begin) {
    return store_.Read(std::span(keys).subspan(begin, std::min(wave, keys.size() - begin)),
                       Priority::kDemand);
  };
  std::shared_ptr<ReadBatch> batch = read(0);
  for (size_t begin = 0; begin < keys.size(); begin += wave) {
    std::shared_ptr<ReadBatch> next = begin + wave < keys.size() ? read(begin + wave) : nullptr;
    // Each expert as its record arrives, a miss row block by row block as
    // its pieces land (as computed does); its output sent at once.
    std::vector<std::vector<float>> outputs(batch->size());
    const auto rows_of = [&](size_t i) -> const v1::ExpertRows& {
      return request.experts(static_cast<int>(begin + i));
    };
    WARP_RETURN_IF_ERROR(ComputeArrivals(
        [&] { return batch->NextArrival(); },
        [&](size_t i, const LandingRecord& landing) {
          const uint32_t m = static_cast<uint32_t>(rows_of(i).rows_size());
          outputs[i].resize(m * uint64_t{request.width()});
          return (*math)->RunLanding(landing, GatherRows(request, rows_of(i)), m, outputs[i],
                                     [&](uint64_t bytes) { return landing.WaitFor(bytes); });
        },
        [&](size_t i, const ExpertRecord& record, bool computed_as_landed) {
          const uint32_t m = static_cast<uint32_t>(rows_of(i).rows_size());
          if (!computed_as_landed) {
            outputs[i].resize(m * uint64_t{request.width()});
            (*math)->Run(record, GatherRows(request, rows_of(i)), m, outputs[i]);
          }
          expert_rows_ += m;
          if (!emit(static_cast<uint32_t>(begin + i), outputs[i], record.served)) {
            return absl::CancelledError("compute request: the client has gone");
          }
          outputs[i] = {};
          return absl::OkStatus();
        }));
    batch = std::move(next);
  }
  return absl::OkStatus();
}

std::map<std::string, uint64_t> ComputeHandler::Counters() const {
  return {{"expertd.compute.requests", requests_.load()},
          {"expertd.compute.rows", rows_.load()},
          {"expertd.compute.expert_rows", expert_rows_.load()},
          {"expertd.compute.refused", refused_.load()}};
}

}  // namespace warp::expertd
