#include "common/client/client_id.h"

#include <random>

namespace warp {

ClientId RandomClientId() {
  std::random_device device;
  ClientId id = kLocalClient;
  while (id == kLocalClient) id = (uint64_t{device()} << 32) | device();
  return id;
}

}  // namespace warp
