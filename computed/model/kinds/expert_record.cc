#include "computed/model/kinds/expert_record.h"

#include <string>

namespace warp::computed {

std::vector<TensorSpec> SwiGluRecord(uint64_t intermediate, uint64_t width, TensorFormat format) {
  return {
      {.name = std::string(RecordMatrix::kGate), .format = format, .shape = {intermediate, width}},
      {.name = std::string(RecordMatrix::kUp), .format = format, .shape = {intermediate, width}},
      {.name = std::string(RecordMatrix::kDown), .format = format, .shape = {width, intermediate}},
  };
}

std::vector<TensorSpec> ClampedSwiGluRecord(uint64_t intermediate, uint64_t width,
                                            TensorFormat format) {
  return {
      {.name = std::string(RecordMatrix::kGateUp),
       .format = format,
       .shape = {2 * intermediate, width}},
      {.name = std::string(RecordMatrix::kGateUpBias),
       .format = TensorFormat::kF32,
       .shape = {2 * intermediate}},
      {.name = std::string(RecordMatrix::kDown), .format = format, .shape = {width, intermediate}},
      {.name = std::string(RecordMatrix::kDownBias), .format = TensorFormat::kF32, .shape = {width}},
  };
}

}  // namespace warp::computed
