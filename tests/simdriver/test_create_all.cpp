// GreenContext::create_all: every partition's context at once, on helper threads, idle contexts
// taken first, and nothing kept when one creation fails.
#include <memory>
#include <set>
#include <vector>

#include "sim_fixture.h"

TEST_F(EmulatedSplit, CreateAllMakesEveryGroupConcurrently) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(15, group(8)), SplitPath::kEmulated);
  const std::vector<const SmPartition*> parts = pointers_to(result.groups);
  auto contexts = GreenContext::create_all(0, parts, std::nullopt);
  ASSERT_EQ(contexts.size(), 15u);
  for (const auto& ctx : contexts) EXPECT_EQ(ctx->sm_count(), 8u);
  expect_disjoint(contexts);
  EXPECT_EQ(live_counts().contexts, 15u);
  contexts.clear();
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(green_ctxs_alive(), 0);
  EXPECT_TRUE(GreenContext::create_all(0, {}, std::nullopt).empty());
}

TEST_F(EmulatedSplit, CreateAllKeepsNothingWhenOneCreationFails) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(4, group(8)), SplitPath::kEmulated);
  const std::vector<const SmPartition*> parts = pointers_to(result.groups);
  sim().fail_next("cuGreenCtxCreate", 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 2);
  EXPECT_THROWS_WITH(GreenContext::create_all(0, parts, std::nullopt), DriverError, "cuGreenCtxCreate");
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(green_ctxs_alive(), 0);
  EXPECT_EQ(sim().misuse(), 0);
}

TEST_F(EmulatedSplit, CreateAllTakesIdleContextsFirstAndStartsThreadsOnlyForCreations) {
  ContextRecycler::instance().set_limit(16);
  SmPartition whole = SmPartition::from_device(0);
  SplitResult eights = split(whole, std::vector<GroupRequest>(6, group(8)));
  SplitResult others = split(whole, {group(16), group(24), group(32)});
  const std::vector<const SmPartition*> parts = pointers_to(eights.groups);
  auto with = [&](std::vector<const SmPartition*> list, std::size_t extra) {
    for (std::size_t i = 0; i < extra; ++i) list.push_back(&others.groups[i]);
    return list;
  };
  struct Delta {
    int creates, threads;
  };
  auto create_all = [&](const std::vector<const SmPartition*>& list,
                        std::vector<std::shared_ptr<GreenContext>>* out) {
    const int creates = sim().calls("cuGreenCtxCreate"), threads = g_threads_started.load();
    *out = GreenContext::create_all(0, list, std::nullopt);
    EXPECT_EQ(out->size(), list.size());
    for (std::size_t i = 0; i < out->size(); ++i) EXPECT_EQ((*out)[i]->sm_count(), list[i]->sm_count()) << i;
    return Delta{sim().calls("cuGreenCtxCreate") - creates, g_threads_started.load() - threads};
  };
  std::vector<std::shared_ptr<GreenContext>> made;

  // Six creations: this thread and five helpers.
  Delta d = create_all(parts, &made);
  EXPECT_EQ(d.creates, 6);
  EXPECT_EQ(d.threads, 5);
  std::set<cu::CUgreenCtx> first;
  for (const auto& ctx : made) first.insert(ctx->handle());
  made.clear();
  EXPECT_EQ(live_counts().idle_contexts, 6u);

  // All six idle: taken on this thread, no creation, no thread.
  d = create_all(parts, &made);
  EXPECT_EQ(d.creates, 0);
  EXPECT_EQ(d.threads, 0);
  std::set<cu::CUgreenCtx> again;
  for (const auto& ctx : made) again.insert(ctx->handle());
  EXPECT_EQ(again, first);
  EXPECT_EQ(live_counts().idle_contexts, 0u);
  EXPECT_EQ(live_counts().contexts, 6u);
  made.clear();

  // Six idle and one to make: the creation runs on this thread.
  d = create_all(with(parts, 1), &made);
  EXPECT_EQ(d.creates, 1);
  EXPECT_EQ(d.threads, 0);
  made.clear();

  // Seven idle and two to make: one helper.
  d = create_all(with(parts, 3), &made);
  EXPECT_EQ(d.creates, 2);
  EXPECT_EQ(d.threads, 1);
  made.clear();
  EXPECT_EQ(live_counts().idle_contexts, 9u);
  EXPECT_EQ(live_counts().contexts, 0u);
}

TEST_F(EmulatedSplit, CreateAllMakesEveryContextWithFewerThreadsThanItAsksFor) {
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(6, group(8)));
  const std::vector<const SmPartition*> parts = pointers_to(result.groups);
  for (int allowed : {0, 2}) {
    const int threads = g_threads_started.load(), creates = sim().calls("cuGreenCtxCreate");
    g_threads_allowed = allowed;  // the rest of the five helpers cannot be started
    std::vector<std::shared_ptr<GreenContext>> made;
    EXPECT_NO_THROW(made = GreenContext::create_all(0, parts, std::nullopt));
    g_threads_allowed = -1;
    EXPECT_EQ(g_threads_started.load() - threads, allowed);
    EXPECT_EQ(sim().calls("cuGreenCtxCreate") - creates, 6);
    ASSERT_EQ(made.size(), 6u);
    for (const auto& ctx : made) ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(expect_disjoint(made).size(), 48u);
  }
}

TEST_F(EmulatedSplit, CreateAllWithIdleContextsStillKeepsNothingOnAFailure) {
  ContextRecycler::instance().set_limit(16);
  SmPartition whole = SmPartition::from_device(0);
  SplitResult result = split(whole, std::vector<GroupRequest>(5, group(8)));
  const std::vector<const SmPartition*> parts = pointers_to(result.groups);
  {
    std::vector<const SmPartition*> first_three(parts.begin(), parts.begin() + 3);
    auto made = GreenContext::create_all(0, first_three, std::nullopt);
  }
  ASSERT_EQ(live_counts().idle_contexts, 3u);
  sim().fail_next("cuGreenCtxCreate", 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 0);
  EXPECT_DRIVER_ERROR(GreenContext::create_all(0, parts, std::nullopt), "cuGreenCtxCreate");
  // The three taken back and the one made are idle again; nothing is in use.
  LiveCounts live = live_counts();
  EXPECT_EQ(live.contexts, 0u);
  EXPECT_EQ(live.idle_contexts, 4u);
  EXPECT_EQ(green_ctxs_alive(), 4);
  // A partition of another device fails the call on this thread, before any creation; the
  // idle contexts taken before it go back.
  const int creates = sim().calls("cuGreenCtxCreate"), threads = g_threads_started.load();
  SmPartition elsewhere(1, whole.resource(), SmPartition::Origin::kDevice, 8, tgc::KeepAlive());
  std::vector<const SmPartition*> mixed = parts;
  mixed.insert(mixed.begin() + 4, &elsewhere);  // after partitions whose contexts are idle
  EXPECT_THROWS_WITH(GreenContext::create_all(0, mixed, std::nullopt), ValueError,
                     "device_id=0 disagrees with the sm_partition's device (1)");
  EXPECT_EQ(sim().calls("cuGreenCtxCreate"), creates);
  EXPECT_EQ(g_threads_started.load(), threads);
  EXPECT_EQ(live_counts().contexts, 0u);
  EXPECT_EQ(live_counts().idle_contexts, 4u);
}

