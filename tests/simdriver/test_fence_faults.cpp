// StreamFence when the driver fails: the error names the call, nothing is left, a refused pop
// leaves its context current, and the fences stay usable.
#include <string>
#include <vector>

#include "fence_records.h"
#include "sim_fixture.h"

TEST_F(Faults, FailedFenceCreationNamesTheCallAndLeavesNothing) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  const std::vector<StreamFence::Member> members{{a, a->stream(0)}, {b, b->stream(0)}};
  const std::vector<void*> earlier = live_event_contexts();
  for (const char* call : {"cuCtxPushCurrent", "cuEventCreate", "cuCtxPopCurrent"}) {
    for (int skip = 0; skip < 2; ++skip) {  // failing for the first stream, then the second
      SCOPED_TRACE(std::string(call) + " failing for stream " + std::to_string(skip + 1));
      sim().fail_next(call, 999, skip);
      EXPECT_THROWS_THAT(StreamFence fence(members), DriverError, [&](const DriverError& e) {
        EXPECT_EQ(e.call(), call);
        EXPECT_CONTAINS(e.what(), "CUDA_ERROR_UNKNOWN");
      });
      sim().clear_failures();
      EXPECT_EQ(live_fence_events(), 0u);
      EXPECT_EQ(events_alive(), 0);
      // A pop the driver refuses leaves that context current, as anywhere in the core.
      const GreenContext& failing = *members[static_cast<std::size_t>(skip)].context;
      const bool left_current = std::string(call) == "cuCtxPopCurrent";
      EXPECT_EQ(current_context(), left_current ? failing.context() : nullptr);
      if (left_current) failing.pop_current();
    }
  }
  sim().fail_next("cuStreamGetCtx", 999, 1);  // checking the second stream's context
  const int creates = sim().calls("cuEventCreate");
  EXPECT_DRIVER_ERROR(StreamFence fence(members), "cuStreamGetCtx");
  sim().clear_failures();
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "streams are checked before any event is made";
  StreamFence fence(members);  // works again
  EXPECT_EQ(live_event_contexts(earlier), sorted({a->context(), b->context()}));
}

TEST_F(Faults, FailedOrderingNamesTheCallAndLeavesTheFencesUsable) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), a1 = a->stream(-1), b0 = b->stream(0), b1 = b->stream(-1);
  StreamFence old_layout({{a, a0}, {b, b0}});
  StreamFence new_layout({{a, a1}, {b, b1}});
  for (const char* call : {"cuEventRecord", "cuStreamWaitEvent"}) {
    for (int skip = 0; skip < 2; ++skip) {
      SCOPED_TRACE(std::string(call) + " failing at call " + std::to_string(skip + 1));
      sim().fail_next(call, 999, skip);
      EXPECT_DRIVER_ERROR(new_layout.order_after(old_layout), call);
      sim().clear_failures();
      EXPECT_EQ(live_fence_events(), 4u);
      EXPECT_EQ(current_context(), nullptr);
    }
  }
  sim().clear_wait_edges();
  new_layout.order_after(old_layout);
  EXPECT_EQ(wait_edges(), all_pairs({a1, b1}, {a0, b0}));
}

TEST_F(Faults, FailedEventDestructionWarnsAndNeverThrows) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  CapturedWarnings warnings;
  {
    StreamFence fence({{a, a->stream(0)}, {a, a->stream(-1)}});
    sim().fail_next("cuEventDestroy", 999, 0);
  }
  warnings.stop();
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_CONTAINS(warnings.messages[0], "cuEventDestroy");
  EXPECT_EQ(live_fence_events(), 0u);
  EXPECT_EQ(events_alive(), 1) << "the other event is destroyed all the same";
  leaked_by_failed_destroys_.events += 1;  // the driver refused: the event stays
}
