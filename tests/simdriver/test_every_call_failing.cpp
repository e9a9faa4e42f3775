// Every driver call the core makes failing in turn, at its first three calls, in a user's
// scenario: the error or a warning names the call, nothing leaks, and the core works again.
#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/localized_memory.h"
#include "core/sm_probe.h"
#include "sim_fixture.h"

namespace {

// What a user does with the core: partitions, a split, contexts made together and alone,
// streams, the probe, push/pop, memory per locality domain (13.4), and dropping everything
// with recycling on.
void user_scenario() {
  ContextRecycler::instance().set_limit(4);
  {
    SmPartition whole = SmPartition::from_device(0);
    SmPartition part = partition_with_at_least(0, 16);
    SplitResult result = split(whole, {group(16), group(24), group(32)});
    const std::vector<const SmPartition*> parts = pointers_to(result.groups);
    auto contexts = GreenContext::create_all(0, parts, std::nullopt);
    auto ctx = GreenContext::create(0, &part, std::nullopt);
    cu::CUstream stream = ctx->stream(0);
    ctx->stream(-1);
    ctx->push_current();
    ctx->pop_current();
    if (stream_sm_count(stream, 0) != ctx->sm_count()) throw std::logic_error("green stream's SM count");
    if (stream_sm_count(nullptr, 0) != 132u) throw std::logic_error("default stream's SM count");
    std::vector<unsigned> ids(64);
    launch_sm_probe(stream, reinterpret_cast<cu::CUdeviceptr>(ids.data()), 64, 32, 0);
    split(GreenContext::sm_partition(ctx), {group(8)});
    {  // a switch of layouts: the second pair of streams after the first
      StreamFence first({{contexts[0], contexts[0]->stream(0)}, {contexts[1], contexts[1]->stream(0)}});
      StreamFence second({{ctx, stream}, {contexts[2], contexts[2]->stream(-1)}});
      second.order_after(first);
    }
    contexts.clear();
    ctx.reset();
    auto again = GreenContext::create(0, &part, std::nullopt);
    again->stream(0);
    if (version() >= 13040) LocalizedMemory::allocate(0, 4096).reset();
  }
  ContextRecycler::instance().release_all();
}

}  // namespace

TEST_F(Faults, EveryDriverCallFailingInTurn) {
  user_scenario();  // loads the probe library once, as a process would
  std::vector<std::string> names;
  for (const EntryPointStatus& entry : entry_point_status())
    if (entry.present) names.push_back(entry.name);
  int failures_seen = 0;
  std::set<std::string> failed_names;
  for (const std::string& name : names) {
    for (int skip = 0; skip < 3; ++skip) {
      SCOPED_TRACE(name + " failing at call " + std::to_string(skip + 1));
      CapturedWarnings warnings;
      const int before = sim().calls(name.c_str());
      sim().fail_next(name.c_str(), 999, skip);
      std::string error;
      ContextRecycler::instance().release_all();
      const int green_before = green_ctxs_alive(), streams_before = streams_alive();
      const int events_before = events_alive(), memories_before = memories_alive();
      const int reservations_before = reservations_alive(), retains_before = primary_retains_alive();
      try {
        user_scenario();
      } catch (const DriverError& e) {
        error = e.call();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a DriverError: " << e.what();
      }
      sim().clear_failures();
      warnings.stop();
      const bool failed = sim().calls(name.c_str()) - before > skip;
      if (failed) {
        ++failures_seen;
        failed_names.insert(name);
        const bool warned = std::any_of(warnings.messages.begin(), warnings.messages.end(), [&](const std::string& w) {
          return w.find(name) != std::string::npos;
        });
        const bool only_formats_messages = name == "cuGetErrorName" || name == "cuGetErrorString";
        EXPECT_TRUE(error == name || warned || only_formats_messages)
            << "the failure was neither raised nor warned about (error: '" << error << "')";
      } else {
        EXPECT_EQ(error, "") << "an error although the call did not fail";
      }
      ContextRecycler::instance().release_all();
      ContextRecycler::instance().set_limit(0);
      LiveCounts live = live_counts();
      EXPECT_EQ(live.contexts + live.internal_contexts + live.streams, 0u);
      const int green_leaked = failed && name == "cuGreenCtxDestroy" ? 1 : 0;
      const int streams_leaked = failed && name == "cuStreamDestroy" ? 1 : 0;
      const int events_leaked = failed && name == "cuEventDestroy" ? 1 : 0;
      EXPECT_EQ(green_ctxs_alive(), green_before + green_leaked);
      EXPECT_EQ(streams_alive(), streams_before + streams_leaked);
      EXPECT_EQ(events_alive(), events_before + events_leaked);
      // A part left mapped keeps its memory and its address range; an unreleased handle its memory.
      const int memories_leaked = failed && (name == "cuMemUnmap" || name == "cuMemRelease") ? 1 : 0;
      const int reservations_leaked = failed && (name == "cuMemUnmap" || name == "cuMemAddressFree") ? 1 : 0;
      const int retains_leaked = failed && name == "cuDevicePrimaryCtxRelease" ? 1 : 0;
      EXPECT_EQ(memories_alive(), memories_before + memories_leaked);
      EXPECT_EQ(reservations_alive(), reservations_before + reservations_leaked);
      EXPECT_EQ(primary_retains_alive(), retains_before + retains_leaked);
      EXPECT_EQ(deferred_localized_releases(), 0u);
      EXPECT_EQ(live_fence_events(), 0u);
      leaked_by_failed_destroys_.green_ctx += green_leaked;
      leaked_by_failed_destroys_.streams += streams_leaked;
      leaked_by_failed_destroys_.events += events_leaked;
      leaked_by_failed_destroys_.memories += memories_leaked;
      leaked_by_failed_destroys_.reservations += reservations_leaked;
      leaked_by_failed_destroys_.primary_retains += retains_leaked;
      EXPECT_EQ(sim().misuse(), 0) << "a handle was used after it was destroyed";
      cu::CUcontext current = nullptr;
      driver().cuCtxGetCurrent(&current);
      // A pop the driver refuses, or cannot check, leaves the context where it is
      // (pop_context can be retried).
      if (!(failed && (name == "cuCtxPopCurrent" || name == "cuCtxGetCurrent"))) {
        EXPECT_EQ(current, nullptr) << "a context was left current";
      }
      while (current != nullptr) {  // tidy up after a failed pop
        cu::CUcontext popped = nullptr;
        driver().cuCtxPopCurrent(&popped);
        driver().cuCtxGetCurrent(&current);
      }
      EXPECT_NO_THROW(user_scenario()) << "the core is usable again afterwards";
    }
  }
  EXPECT_GT(failures_seen, 20);
  for (const char* call : {"cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy"})
    EXPECT_TRUE(failed_names.count(call)) << call << " was never failed";
  std::printf("driver calls failed in turn: %d failures over %zu entry points\n", failures_seen, names.size());
}
