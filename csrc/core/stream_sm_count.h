// How many SMs work launched on a stream can use: the SMs of the green context the stream
// belongs to, or the whole device for a stream of a regular context. Cheap enough to ask per
// kernel launch: driver queries that touch no GPU, and a table lookup for the green contexts
// this package made.
#pragma once

#include <cstddef>

#include "cuda_abi.h"

namespace tgc {

// The SM count of `stream`, a stream of device `ordinal`. The driver says which green context
// the stream belongs to (cuStreamGetGreenCtx, asked on every call, so a stream handle that the
// driver hands out again after a destruction is never answered for its old stream); a stream
// of a regular context, or any stream on a driver without green contexts, has all the
// device's SMs. NULL and the special handles (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) mean the
// default stream of the calling thread's current context: the primary context's when none is
// current, as the runtime would make it current.
unsigned stream_sm_count(abi::CUstream stream, int ordinal);

// The SM counts of the green contexts this package made, by handle, so that stream_sm_count
// needs no second driver call for them (other green contexts are asked of the driver each
// time). A context is remembered once made and forgotten before it is destroyed, so a handle
// the driver hands out again is never looked up under its old count.
void remember_green_context(abi::CUgreenCtx green_ctx, unsigned sm_count);
void forget_green_context(abi::CUgreenCtx green_ctx) noexcept;
// How many are remembered now (for leak checks).
std::size_t remembered_green_contexts();

}  // namespace tgc
