// What the core holds, and the idle green contexts it keeps for reuse.
//
// On driver 13.0 (measured on an H200) every cuGreenCtxCreate + cuGreenCtxDestroy cycle keeps
// 4 MiB of device memory and about 1.7 MiB of host memory that the process never gets back,
// and creating a context takes about 1.7 ms. So a GreenContext that is dropped does not destroy
// its driver context: its streams are synchronised and the context, with its streams, waits
// (up to a limit, oldest evicted first) for the next GreenContext made from the same SMs with
// the same workqueue options, which gets it back in microseconds.
#pragma once

#include <cstddef>

namespace tgc {

// Counts of what the core holds right now, for leak checks.
struct LiveCounts {
  std::size_t contexts = 0;           // green contexts in use by users
  std::size_t internal_contexts = 0;  // in use by emulated splits
  std::size_t streams = 0;            // streams of the contexts in use
  std::size_t idle_contexts = 0;      // kept for reuse
  std::size_t idle_streams = 0;       // streams of the idle contexts
};

// One consistent snapshot: a context moving to or from the idle set is counted once.
LiveCounts live_counts();
// Destroys every idle context.
void release_idle_contexts();
// The most idle contexts kept (default 16, or the environment variable below).
std::size_t idle_context_limit();
// Sets that limit (0: destroy contexts when dropped); evicts the excess.
void set_idle_context_limit(std::size_t limit);

// The environment variable that sets the initial limit.
const char* idle_limit_env();
// ValueError when that variable is set to anything but a whole number 0 or more (the limit
// then stays the default); called before every context is made.
void check_idle_limit_env();

}  // namespace tgc
