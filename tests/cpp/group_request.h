// Shorthand for split requests in the C++ tests.
#pragma once

#include "core/split.h"

namespace tgc::testing {

inline GroupRequest group(unsigned count, unsigned coscheduled = 0, bool backfill = false) {
  GroupRequest r;
  r.sm_count = count;
  r.coscheduled_sm_count = coscheduled;
  r.backfill = backfill;
  return r;
}

}  // namespace tgc::testing
