#pragma once

// Mixtral (`mixtral`): GQA without norms or biases, softmax top-2 routing,
// renormalised; every layer is MoE, experts named w1/w3/w2.
// Specification: transformers models/mixtral/modeling_mixtral.py.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& MixtralFamily();

}  // namespace warp::computed
