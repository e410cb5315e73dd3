#include "common/wire/proto_convert.h"

#include "absl/strings/str_cat.h"

namespace warp {

v1::StatusProto ToProto(const absl::Status& status) {
  v1::StatusProto proto;
  proto.set_code(static_cast<int32_t>(status.code()));
  proto.set_message(std::string(status.message()));
  return proto;
}

absl::Status FromProto(const v1::StatusProto& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.code()), status.message());
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

v1::Priority ToProto(Priority priority) {
  switch (priority) {
    case Priority::kDemand:
      return v1::PRIORITY_DEMAND;
    case Priority::kCertain:
      return v1::PRIORITY_CERTAIN;
    case Priority::kLookahead:
      return v1::PRIORITY_LOOKAHEAD;
  }
  return v1::PRIORITY_DEMAND;
}

Priority FromProto(v1::Priority priority) {
  switch (priority) {
    case v1::PRIORITY_CERTAIN:
      return Priority::kCertain;
    case v1::PRIORITY_LOOKAHEAD:
      return Priority::kLookahead;
    default:
      return Priority::kDemand;
  }
}

// Served and v1::Served number their values alike.
static_assert(static_cast<int>(Served::kCache) == v1::SERVED_CACHE &&
              static_cast<int>(Served::kLookahead) == v1::SERVED_LOOKAHEAD &&
              static_cast<int>(Served::kCertain) == v1::SERVED_CERTAIN &&
              static_cast<int>(Served::kDisk) == v1::SERVED_DISK && kServedKinds == 5);

v1::Served ToProto(Served served) { return static_cast<v1::Served>(served); }

Served FromProto(v1::Served served) {
  const int value = static_cast<int>(served);
  return value > 0 && value < static_cast<int>(kServedKinds) ? static_cast<Served>(value)
                                                             : Served::kUnknown;
}

v1::ExpertMath ToProto(const ExpertMathSpec& spec, bool q8_activations) {
  v1::ExpertMath math;
  math.set_activation(spec.activation == ExpertActivation::kClampedSwiGlu
                          ? v1::ExpertMath::ACTIVATION_CLAMPED_SWIGLU
                          : v1::ExpertMath::ACTIVATION_SWIGLU);
  math.set_glu_limit(spec.glu.limit);
  math.set_situ(spec.glu.situ);
  math.set_situ_beta(spec.glu.beta);
  math.set_situ_linear_beta(spec.glu.linear_beta);
  math.set_swiglu_limit(spec.swiglu_limit);
  math.set_q8_activations(q8_activations);
  return math;
}

absl::StatusOr<ExpertMathSpec> FromProto(const v1::ExpertMath& math) {
  ExpertMathSpec spec{.glu = {.limit = math.glu_limit(),
                              .situ = math.situ(),
                              .beta = math.situ_beta(),
                              .linear_beta = math.situ_linear_beta()},
                      .swiglu_limit = math.swiglu_limit()};
  switch (math.activation()) {
    case v1::ExpertMath::ACTIVATION_SWIGLU:
      spec.activation = ExpertActivation::kSwiGlu;
      return spec;
    case v1::ExpertMath::ACTIVATION_CLAMPED_SWIGLU:
      spec.activation = ExpertActivation::kClampedSwiGlu;
      return spec;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("math.activation ", static_cast<int>(math.activation()), " is unknown"));
  }
}

}  // namespace warp
