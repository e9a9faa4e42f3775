// The contexts an emulated split makes for itself (see split.h): counted apart from the users'
// contexts, never handed to users. Internal to the core.
#pragma once

#include <memory>

#include "green_context.h"

namespace tgc {

struct InternalContexts {
  // A context on `sm`, whose splittable resource an emulated split reads.
  static std::shared_ptr<GreenContext> create(const SmPartition& sm);
};

}  // namespace tgc
