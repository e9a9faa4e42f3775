// Dropped contexts kept idle for reuse (ContextRecycler): what is kept, what is waited for,
// and what is never reused.
#include <memory>
#include <string>

#include "sim_fixture.h"

TEST_F(Contexts, ADroppedContextWaitsForItsStreamsOnce) {
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  ctx->stream(-1);
  int waits = sim().calls("cuStreamSynchronize");
  ctx.reset();  // not kept (limit 0): waited for once, then destroyed
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 2);
  EXPECT_EQ(streams_alive(), 0);

  // Kept, then evicted: the wait when it was kept is the only one.
  ContextRecycler::instance().set_limit(1);
  ctx = GreenContext::create(0, &part, std::nullopt);
  for (int i = 0; i < 3; ++i) ctx->stream(0);
  waits = sim().calls("cuStreamSynchronize");
  ctx.reset();
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 3);
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 3);
  EXPECT_EQ(streams_alive(), 0);

  // Taken from the recycler and used again: waited for again when dropped.
  ContextRecycler::instance().set_limit(1);
  ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  ctx.reset();
  ctx = GreenContext::create(0, &part, std::nullopt);
  ContextRecycler::instance().set_limit(0);
  waits = sim().calls("cuStreamSynchronize");
  ctx.reset();
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 1);

  // A wait that failed is made again before the stream is destroyed.
  CapturedWarnings warnings;
  ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  waits = sim().calls("cuStreamSynchronize");
  sim().fail_next("cuStreamSynchronize", 999, 0);
  ctx.reset();
  warnings.stop();
  EXPECT_EQ(sim().calls("cuStreamSynchronize") - waits, 2);
  EXPECT_EQ(warnings.messages.size(), 1u);
  EXPECT_EQ(streams_alive(), 0);
}

TEST_F(Contexts, AContextInUseIsCountedExactlyAsLongAsItIsOwned) {
  ContextRecycler::instance().set_limit(2);
  ContextRecycler& recycler = ContextRecycler::instance();
  RecycleKey key;  // no real context needed: handles without driver objects
  key.device = 7;
  EXPECT_FALSE(recycler.take(key, ContextKind::kUser)) << "nothing idle for that key";
  // An owner made by adopt counts from the start and uncounts (destroying) when it goes.
  ContextInUse owned = recycler.adopt(key, ContextKind::kInternal, std::make_unique<ContextHandles>());
  EXPECT_TRUE(owned);
  EXPECT_EQ(live_counts().internal_contexts, 1u);
  ContextInUse moved(std::move(owned));
  EXPECT_FALSE(owned);
  EXPECT_EQ(live_counts().internal_contexts, 1u) << "a move counts nothing twice";
  ContextInUse assigned = recycler.adopt(key, ContextKind::kUser, std::make_unique<ContextHandles>());
  EXPECT_EQ(live_counts().contexts, 1u);
  assigned = std::move(moved);  // the user context it held goes
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().internal_contexts, 1u);
  EXPECT_EQ(assigned.key().device, 7);
  assigned.retire(true);  // kept for reuse
  EXPECT_FALSE(assigned);
  EXPECT_EQ(live_counts().internal_contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 1u);
  {
    ContextInUse taken = recycler.take(key, ContextKind::kUser);
    EXPECT_TRUE(taken);
    EXPECT_EQ(live_counts().contexts, 1u);
    EXPECT_EQ(live_counts().idle_contexts, 0u);
  }  // dropped without retire(true): destroyed, not kept
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  ContextInUse empty;
  empty.retire(true);  // holds nothing: nothing happens
  EXPECT_EQ(live_counts().idle_contexts, 0u);
}

TEST_F(Contexts, DroppedContextsAreReusedWithTheirStreams) {
  ContextRecycler::instance().set_limit(2);
  SmPartition part = partition_with_at_least(0, 16);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  cu::CUgreenCtx first = ctx->handle();
  cu::CUstream stream = ctx->stream(0);
  ctx.reset();
  EXPECT_EQ(green_ctxs_alive(), 1) << "kept, not destroyed";
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().streams, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 1u);
  EXPECT_EQ(live_counts().idle_streams, 1u);

  const int creates = sim().calls("cuGreenCtxCreate");
  auto again = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates) << "reused";
  EXPECT_EQ(again->handle(), first);
  EXPECT_EQ(again->stream(0), stream);
  EXPECT_EQ(again->sm_count(), 16u);
  EXPECT_EQ(live_counts().streams, 1u);
  EXPECT_EQ(live_counts().idle_contexts, 0u);

  // Other SMs or other options never get it.
  SmPartition other = partition_with_at_least(0, 24);
  auto different = GreenContext::create(0, &other, std::nullopt);
  EXPECT_NE(different->handle(), first);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates + 1);

  // The limit holds: the oldest idle context is destroyed first.
  SmPartition third_part = partition_with_at_least(0, 32);
  auto third = GreenContext::create(0, &third_part, std::nullopt);
  again.reset();
  different.reset();
  third.reset();
  EXPECT_EQ(live_counts().idle_contexts, 2u);
  EXPECT_EQ(green_ctxs_alive(), 2);
  auto reused = GreenContext::create(0, &part, std::nullopt);
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates + 3) << "the 16-SM context was evicted";
  reused.reset();
  ContextRecycler::instance().set_limit(0);
  EXPECT_EQ(green_ctxs_alive(), 0);
  EXPECT_EQ(streams_alive(), 0);
}

TEST_F(Contexts, AContextWhoseStreamFailedIsNotReused) {
  ContextRecycler::instance().set_limit(4);
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  CapturedWarnings warnings;
  sim().fail_next("cuStreamSynchronize", 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */, 0);
  ctx.reset();
  warnings.stop();
  ASSERT_EQ(warnings.messages.size(), 1u);
  EXPECT_CONTAINS(warnings.messages[0], "cuStreamSynchronize");
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  EXPECT_EQ(green_ctxs_alive(), 0);
}

TEST_F(EmulatedSplit, RepeatedSplitsReuseTheirContexts) {
  ContextRecycler::instance().set_limit(8);
  SmPartition whole = SmPartition::from_device(0);
  int creates_after_first = 0;
  for (int round = 0; round < 20; ++round) {
    SplitResult result = split(whole, {group(16), group(24), group(32)}, SplitPath::kEmulated);
    auto contexts = contexts_of(result, {16, 24, 32});
    if (round == 0) creates_after_first = sim().calls("cuGreenCtxCreate");
  }
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates_after_first) << "later rounds made no context";
  EXPECT_EQ(live_counts().internal_contexts, 0u);
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 5u);  // 3 groups and 2 internal contexts
}
