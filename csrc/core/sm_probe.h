// The SM-id probe: a kernel whose blocks record the SM (%smid) they ran on, to show which SMs
// work on a stream can actually reach.
#pragma once

#include "cuda_abi.h"

namespace tgc {

// Enqueues the probe on `stream`: `blocks` blocks of `threads` threads, block b writing its
// SM id to ((unsigned*)sm_ids)[b] and then staying busy for `spin_ns` ns.
void launch_sm_probe(abi::CUstream stream, abi::CUdeviceptr sm_ids, unsigned blocks,
                     unsigned threads, unsigned long long spin_ns);

}  // namespace tgc
