// The driver calls behind GreenContext(num_sms=n), GreenContext.split and Stream(), made with
// nothing around them: the baselines the benchmarks compare the package against. Each
// function times the calls with a steady clock and cleans up after itself (not timed).
#pragma once

#include <cstdint>

namespace tgc::bench {

struct Timing {
  std::int64_t create_ns = 0;   // all the calls of the creation, the split included
  std::int64_t destroy_ns = 0;
  std::int64_t split_ns = 0;    // the part of create_ns up to the end of the split
};

// cuDeviceGet, cuDeviceGetDevResource, cuDevSmResourceSplitByCount (one group of at least
// `min_sms`), cuDevResourceGenerateDesc, cuGreenCtxCreate, cuCtxFromGreenCtx,
// cuGreenCtxGetDevResource; then cuGreenCtxDestroy. With `bare`, only the calls that make and
// destroy the context (no cuCtxFromGreenCtx, no cuGreenCtxGetDevResource).
Timing raw_create(int device, unsigned min_sms, bool bare = false);

// One cuDevSmResourceSplitByCount into `first_sms` and the remainder, then a context of each
// (as raw_create does after its split). With `concurrently`, the two contexts are created on
// two threads at once, to see whether the driver serialises creation.
Timing raw_split_create(int device, unsigned first_sms, bool concurrently);

// cuGreenCtxStreamCreate on the green context `green_ctx` (a CUgreenCtx), then cuStreamDestroy.
Timing raw_stream_create(std::uintptr_t green_ctx, int priority);

}  // namespace tgc::bench
