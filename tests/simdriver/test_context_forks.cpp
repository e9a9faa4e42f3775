// A fork with contexts alive: the child gets a clear error, and never hangs on a lock another
// thread of the parent held at the fork.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "sim_fixture.h"

namespace tgc {
// Holds the recycler's lock, as a thread inside the recycler does, for the fork test.
struct ContextRecyclerTestAccess {
  static std::mutex& mutex() { return ContextRecycler::instance().mutex_; }
};
}  // namespace tgc

TEST_F(Contexts, AForkedChildGetsAClearErrorAndCleansUpNothing) {
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  ctx->stream(0);
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int code = 1;
    try {
      driver();
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("'spawn'") != std::string::npos ? 0 : 2;
    }
    ctx.reset();  // the inherited context: no driver call, no crash
    child_exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NO_THROW(driver());  // the parent is unaffected
  ctx.reset();
}

TEST_F(Contexts, AForkWhileAnotherThreadHoldsTheRecyclerLockDoesNotHangTheChild) {
  ContextRecycler::instance().set_limit(2);
  SmPartition part = partition_with_at_least(0, 8);
  auto ctx = GreenContext::create(0, &part, std::nullopt);
  std::atomic<bool> held{false};
  std::thread holder([&held] {
    std::lock_guard<std::mutex> lock(ContextRecyclerTestAccess::mutex());
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  while (!held.load()) std::this_thread::yield();
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int code = 0;
    LiveCounts live = live_counts();  // takes the recycler's lock
    if (live.contexts != 1) code = 3;
    try {
      GreenContext::create(0, &part, std::nullopt);
      code = 4;
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("'spawn'") == std::string::npos) code = 5;
    }
    ctx.reset();  // the inherited context: no driver call, uncounted, not kept
    live = live_counts();
    if (live.contexts != 0 || live.idle_contexts != 0) code = 6;
    child_exit(code);
  }
  holder.join();
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; done == 0 && waited_ms < 10000; waited_ms += 10) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child hung (killed after 10 s)";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(live_counts().contexts, 1u) << "the parent is unaffected";
  ctx.reset();
  EXPECT_EQ(live_counts().idle_contexts, 1u);
}
