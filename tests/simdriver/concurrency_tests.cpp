// The core's shared state under many threads, against the simulated driver. run_tests.sh also
// builds and runs this under ThreadSanitizer.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/context_recycler.h"
#include "core/driver_api.h"
#include "core/green_context.h"
#include "core/sm_partition.h"
#include "core/split.h"
#include "core/stream_sm_count.h"
#include "group_request.h"

using namespace tgc;
using tgc::testing::group;
namespace cu = tgc::abi;

namespace {

int sim_live(const char* kind) {
  static auto fn = [] {
    void* lib = dlopen(std::getenv(driver_library_env()), RTLD_NOW);
    return reinterpret_cast<int (*)(const char*)>(dlsym(lib, "tgc_sim_live"));
  }();
  return fn(kind);
}

void expect_nothing_left() {
  ContextRecycler::instance().release_all();
  LiveCounts live = live_counts();
  EXPECT_EQ(live.contexts + live.internal_contexts + live.streams + live.idle_contexts + live.idle_streams, 0u);
  EXPECT_EQ(sim_live("green_ctx"), 0);
  EXPECT_EQ(sim_live("stream"), 0);
}

TEST(Concurrency, ThreadsCreateSplitStreamAndDropContexts) {
  ContextRecycler::instance().set_limit(8);
  constexpr int kThreads = 16, kRounds = 40;
  std::atomic<int> errors{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &errors, &done] {
      try {
        for (int r = 0; r < kRounds; ++r) {
          SmPartition part = partition_with_at_least(0, 8u * (1 + (t + r) % 4));
          auto ctx = GreenContext::create(0, &part, std::nullopt);
          cu::CUstream a = ctx->stream(0);
          cu::CUstream b = ctx->stream(t % 2 ? -1 : 0);
          if (a == nullptr || b == nullptr || ctx->sm_count() < 8) ++errors;
          if (stream_sm_count(a, 0) != ctx->sm_count() || stream_sm_count(b, 0) != ctx->sm_count()) ++errors;
          SplitResult result = split(SmPartition::from_device(0), {group(8), group(16)});
          std::vector<const SmPartition*> parts;
          for (const SmPartition& g : result.groups) parts.push_back(&g);
          auto made = GreenContext::create_all(0, parts, std::nullopt);
          if (made.size() != 2 || made[0]->sm_count() != 8 || made[1]->sm_count() != 16) ++errors;
          SplitResult inner = split(GreenContext::sm_partition(ctx), {group(8)});
          if (inner.groups.size() != 1) ++errors;
          ++done;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        ++errors;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(done.load(), kThreads * kRounds);
  ContextRecycler::instance().set_limit(0);
  expect_nothing_left();
}

TEST(Concurrency, ThreadsShareOneContextsStreamPool) {
  ContextRecycler::instance().set_limit(0);
  auto ctx = GreenContext::create(0, nullptr, std::nullopt);
  std::vector<std::thread> threads;
  std::vector<std::set<cu::CUstream>> seen(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &ctx, &seen] {
      for (int i = 0; i < 500; ++i) seen[t].insert(ctx->stream(i % 2 ? -1 : 0));
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<cu::CUstream> all;
  for (const auto& s : seen) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), 2 * GreenContext::kStreamsPerPriority);
  EXPECT_EQ(ctx->stream_count(), 2 * GreenContext::kStreamsPerPriority);
  ctx.reset();
  expect_nothing_left();
}

TEST(Concurrency, RecyclerLimitChangesWhileThreadsDropContexts) {
  ContextRecycler::instance().set_limit(4);
  std::atomic<bool> stop{false};
  std::thread tuner([&stop] {
    for (std::size_t i = 0; !stop.load(); ++i) {
      ContextRecycler::instance().set_limit(i % 6);
      if (i % 7 == 0) ContextRecycler::instance().release_all();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int r = 0; r < 50; ++r) {
        SmPartition part = partition_with_at_least(0, 8u * (1 + (t + r) % 3));
        auto ctx = GreenContext::create(0, &part, std::nullopt);
        ctx->stream(0);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  stop = true;
  tuner.join();
  ContextRecycler::instance().set_limit(0);
  expect_nothing_left();
}

TEST(Concurrency, LiveCountsAreOneSnapshotWhileContextsMoveToAndFromIdle) {
  constexpr int kThreads = 8, kRounds = 200;
  ContextRecycler::instance().set_limit(2 * kThreads);
  // Each thread its own partition (its own recycle key): the context it drops is the one it
  // gets back, so in use + idle stays kThreads (and their streams kThreads) throughout.
  std::vector<SmPartition> parts;
  std::vector<std::shared_ptr<GreenContext>> contexts;
  std::vector<cu::CUstream> streams;
  for (int t = 0; t < kThreads; ++t) {
    parts.push_back(partition_with_at_least(0, 8u * (t + 1)));
    contexts.push_back(GreenContext::create(0, &parts.back(), std::nullopt));
    streams.push_back(contexts.back()->stream(0));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, inconsistent{0}, errors{0};
  std::thread reader([&] {
    while (!stop.load()) {
      LiveCounts live = live_counts();
      if (live.contexts + live.idle_contexts != kThreads || live.streams + live.idle_streams != kThreads ||
          live.internal_contexts != 0) {
        ++inconsistent;
      }
      ++reads;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &parts, &contexts, &streams, &errors] {
      const std::size_t i = static_cast<std::size_t>(t);
      std::shared_ptr<GreenContext>& ctx = contexts[i];
      const cu::CUgreenCtx handle = ctx->handle();
      for (int r = 0; r < kRounds; ++r) {
        ctx.reset();
        ctx = GreenContext::create(0, &parts[i], std::nullopt);
        // The same context, its stream pool handing out its first stream again.
        if (ctx->handle() != handle || ctx->stream(0) != streams[i]) ++errors;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  while (reads.load() < 100) std::this_thread::yield();
  stop = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0) << "a context came back other than the one dropped";
  EXPECT_EQ(inconsistent.load(), 0) << "of " << reads.load() << " reads";
  LiveCounts live = live_counts();
  EXPECT_EQ(live.contexts, static_cast<std::size_t>(kThreads));
  EXPECT_EQ(live.streams, static_cast<std::size_t>(kThreads));
  contexts.clear();
  ContextRecycler::instance().set_limit(0);
  expect_nothing_left();
}

}  // namespace
