#pragma once

// Conversions between absl and the warp.v1 wire types, in one place: status
// codes, priorities, how a read was served, expert keys, the experts' math.
// gRPC status <-> absl::Status lives here too.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/compute/expert_math_spec.h"
#include "common/store/expert_source.h"
#include "grpcpp/support/status.h"
#include "warp/v1/expert.pb.h"
#include "warp/v1/expert_service.pb.h"

namespace warp {

v1::StatusProto ToProto(const absl::Status& status);
absl::Status FromProto(const v1::StatusProto& status);

grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

v1::Priority ToProto(Priority priority);
Priority FromProto(v1::Priority priority);

v1::Served ToProto(Served served);
Served FromProto(v1::Served served);  // an unknown value (a newer daemon) is kUnknown

v1::ExpertMath ToProto(const ExpertMathSpec& spec, bool q8_activations);
// InvalidArgument naming an activation this build does not know.
absl::StatusOr<ExpertMathSpec> FromProto(const v1::ExpertMath& math);

}  // namespace warp
