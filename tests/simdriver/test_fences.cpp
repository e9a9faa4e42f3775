// StreamFence: layouts of green-context streams ordered after one another, with one event per
// stream made in the stream's context, and the simulated driver's own event rules.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fence_records.h"
#include "sim_fixture.h"

TEST_F(Fences, OneEventPerStreamMadeInTheStreamsContext) {
  SmPartition part = partition_with_at_least(0, 16);
  auto a = GreenContext::create(0, &part, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), a1 = a->stream(-1), b0 = b->stream(0);
  const std::vector<void*> earlier = live_event_contexts();
  const int creates = sim().calls("cuEventCreate"), pushes = sim().calls("cuCtxPushCurrent");
  const int pops = sim().calls("cuCtxPopCurrent");
  {
    StreamFence fence({{a, a0}, {a, a1}, {b, b0}});
    EXPECT_EQ(fence.size(), 3u);
    EXPECT_EQ(fence.device(), 0);
    EXPECT_EQ(sim().calls("cuEventCreate") - creates, 3);
    EXPECT_EQ(sim().calls("cuCtxPushCurrent") - pushes, 3);
    EXPECT_EQ(sim().calls("cuCtxPopCurrent") - pops, 3);
    EXPECT_EQ(live_fence_events(), 3u);
    EXPECT_EQ(events_alive(), 3);
    EXPECT_EQ(live_event_contexts(earlier), sorted({a->context(), a->context(), b->context()}));
    EXPECT_EQ(current_context(), nullptr) << "a context was left current";
  }
  EXPECT_EQ(live_fence_events(), 0u);
  EXPECT_EQ(events_alive(), 0);
  b->push_current();  // whatever is current stays current
  {
    StreamFence fence({{a, a1}});
    EXPECT_EQ(current_context(), b->context());
    EXPECT_EQ(live_event_contexts(earlier), sorted({a->context()}));
  }
  b->pop_current();
}

TEST_F(Fences, EventsAreDestroyedBeforeTheirContexts) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  auto fence = std::make_unique<StreamFence>(std::vector<StreamFence::Member>{{a, a->stream(0)}, {b, b->stream(0)}});
  std::weak_ptr<GreenContext> weak_a = a, weak_b = b;
  a.reset();
  b.reset();
  EXPECT_FALSE(weak_a.expired() || weak_b.expired()) << "the fence holds its contexts";
  EXPECT_EQ(green_ctxs_alive(), 2);
  fence.reset();
  EXPECT_TRUE(weak_a.expired() && weak_b.expired());
  EXPECT_EQ(events_alive(), 0);
  EXPECT_EQ(green_ctxs_alive(), 0);
  EXPECT_EQ(live_fence_events(), 0u);
  // The simulated driver counts an event destroyed after its context as misuse (TearDown).
}

TEST_F(Fences, OrderAfterRecordsOnTheEarlierStreamsAndEveryStreamWaitsForEach) {
  std::vector<std::shared_ptr<GreenContext>> c;
  for (int i = 0; i < 4; ++i) c.push_back(GreenContext::create(0, nullptr, std::nullopt));
  cu::CUstream s0 = c[0]->stream(0), s1 = c[1]->stream(0), s2 = c[2]->stream(0), s2_high = c[2]->stream(-1);
  cu::CUstream s3 = c[3]->stream(0);
  StreamFence old_layout({{c[0], s0}, {c[1], s1}});
  StreamFence new_layout({{c[2], s2}, {c[3], s3}, {c[2], s2_high}});
  sim().clear_wait_edges();
  int records = sim().calls("cuEventRecord"), waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_after(old_layout);
  EXPECT_EQ(sim().calls("cuEventRecord") - records, 2);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent") - waits, 6);
  EXPECT_EQ(wait_edges(), all_pairs({s2, s3, s2_high}, {s0, s1}));
  EXPECT_EQ(current_context(), nullptr);

  // The same layout again: nothing recorded, nothing waited for.
  sim().clear_wait_edges();
  records = sim().calls("cuEventRecord");
  waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_after(new_layout);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent"), waits);
  EXPECT_TRUE(wait_edges().empty());

  // Layouts sharing a stream: it also waits for its own recording, which costs nothing.
  StreamFence overlapping({{c[0], s0}, {c[2], s2}});
  sim().clear_wait_edges();
  overlapping.order_after(new_layout);
  EXPECT_EQ(wait_edges(), all_pairs({s0, s2}, {s2, s3, s2_high}));
  sim().clear_wait_edges();
  old_layout.order_after(overlapping);  // the events are recorded anew each time
  EXPECT_EQ(wait_edges(), all_pairs({s0, s1}, {s0, s2}));
}

TEST_F(Fences, OrderEachAfterPairsTheStreamsByPosition) {
  std::vector<std::shared_ptr<GreenContext>> c;
  for (int i = 0; i < 4; ++i) c.push_back(GreenContext::create(0, nullptr, std::nullopt));
  cu::CUstream old_latency = c[0]->stream(-1), old_batch = c[1]->stream(0);
  cu::CUstream new_latency = c[2]->stream(-1), new_batch = c[3]->stream(0);
  StreamFence old_layout({{c[0], old_latency}, {c[1], old_batch}});
  StreamFence new_layout({{c[2], new_latency}, {c[3], new_batch}});
  sim().clear_wait_edges();
  int records = sim().calls("cuEventRecord"), waits = sim().calls("cuStreamWaitEvent");
  new_layout.order_each_after(old_layout);
  EXPECT_EQ(sim().calls("cuEventRecord") - records, 2);
  EXPECT_EQ(sim().calls("cuStreamWaitEvent") - waits, 2);
  EXPECT_EQ(wait_edges(), sorted_edges({{new_latency, old_latency}, {new_batch, old_batch}}))
      << "each stream waits for its own role's stream alone";
  EXPECT_EQ(current_context(), nullptr);

  // Itself: nothing recorded, nothing waited for.
  records = sim().calls("cuEventRecord");
  new_layout.order_each_after(new_layout);
  EXPECT_EQ(sim().calls("cuEventRecord"), records);

  // Fences of different sizes cannot be paired; nothing is recorded before the check.
  StreamFence single({{c[0], c[0]->stream(0)}});
  records = sim().calls("cuEventRecord");
  EXPECT_THROWS_WITH(new_layout.order_each_after(single), ValueError,
                     "as many streams as each other, not 2 and 1");
  EXPECT_EQ(sim().calls("cuEventRecord"), records);

  // One context with two streams (a layout of the whole device) pairs the same way.
  cu::CUstream whole_latency = c[0]->stream(-1), whole_batch = c[0]->stream(0);
  StreamFence whole({{c[0], whole_latency}, {c[0], whole_batch}});
  sim().clear_wait_edges();
  whole.order_each_after(new_layout);
  EXPECT_EQ(wait_edges(), sorted_edges({{whole_latency, new_latency}, {whole_batch, new_batch}}));
  StreamFence moved(std::move(whole));
  EXPECT_THROW(whole.order_each_after(new_layout), ValueError);  // NOLINT(bugprone-use-after-move)
}

TEST_F(Fences, AStreamOfAnotherContextIsRefused) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  const int creates = sim().calls("cuEventCreate");
  for (const auto& wrong : {std::pair{std::vector<StreamFence::Member>{{a, a->stream(0)}, {a, b->stream(0)}}, 1},
                            std::pair{std::vector<StreamFence::Member>{{b, a->stream(-1)}}, 0}}) {
    EXPECT_THROWS_WITH(StreamFence fence(wrong.first), ValueError,
                       "stream " + std::to_string(wrong.second) +
                           " of the StreamFence is not a stream of the green context given with it");
  }
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "nothing made";
  EXPECT_EQ(live_fence_events(), 0u);
}

TEST_F(Fences, MissingMembersAreValueErrorsAndMovedFromFencesAreEmpty) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream s = a->stream(0);
  const int creates = sim().calls("cuEventCreate");
  EXPECT_THROWS_WITH(StreamFence fence(std::vector<StreamFence::Member>{}), ValueError, "at least one stream");
  EXPECT_THROW(StreamFence(std::vector<StreamFence::Member>{{nullptr, s}}), ValueError);
  EXPECT_THROW(StreamFence(std::vector<StreamFence::Member>{{a, s}, {a, nullptr}}), ValueError);
  EXPECT_EQ(sim().calls("cuEventCreate"), creates) << "checked before any event was made";

  StreamFence first({{a, s}});
  StreamFence moved(std::move(first));
  EXPECT_EQ(first.size(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_EQ(live_fence_events(), 1u);
  EXPECT_THROW(moved.order_after(first), ValueError);
  EXPECT_THROW(first.order_after(moved), ValueError);
  StreamFence assigned({{a, s}, {a, a->stream(-1)}});
  EXPECT_EQ(live_fence_events(), 3u);
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 1u);
  EXPECT_EQ(moved.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(live_fence_events(), 1u) << "the assigned-to fence's events were destroyed";
  EXPECT_EQ(events_alive(), 1);
  StreamFence other({{a, a->stream(-1)}});
  sim().clear_wait_edges();
  assigned.order_after(other);
  EXPECT_EQ(wait_edges().size(), 1u);
}

TEST_F(Fences, TheSimulatedDriverKeepsEventsToTheirContexts) {
  auto a = GreenContext::create(0, nullptr, std::nullopt);
  auto b = GreenContext::create(0, nullptr, std::nullopt);
  cu::CUstream a0 = a->stream(0), b0 = b->stream(0);
  const DriverApi& api = driver();
  cu::CUevent none = nullptr;
  EXPECT_EQ(api.cuEventCreate(&none, cu::CU_EVENT_DISABLE_TIMING), 201) << "needs a current context";
  a->push_current();
  cu::CUevent of_a = nullptr;
  ASSERT_EQ(api.cuEventCreate(&of_a, cu::CU_EVENT_DISABLE_TIMING), 0);
  a->pop_current();
  sim().clear_wait_edges();
  EXPECT_EQ(api.cuStreamWaitEvent(b0, of_a, 0), 0) << "a wait takes another context's event";
  EXPECT_EQ(wait_edges(), std::vector<WaitEdge>({{b0, nullptr}})) << "never recorded";
  pid_t child = fork();  // the refusal counts as misuse: let a child see it
  ASSERT_NE(child, -1);
  if (child == 0) {  // raw driver calls only: the core refuses to run in a forked child
    const int misuse = sim().misuse();
    const bool refused = api.cuEventRecord(of_a, b0) == 400 && sim().misuse() == misuse + 1;
    std::_Exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "recorded on another context's stream";
  EXPECT_EQ(api.cuEventRecord(of_a, a0), 0);
  EXPECT_EQ(api.cuEventDestroy(of_a), 0);
}
