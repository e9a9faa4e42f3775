#include "context_recycler.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "errors.h"

namespace tgc {

namespace {
constexpr std::size_t kDefaultIdleLimit = 16;

// The variable's value as a limit; nullopt when it is not a whole number from 0 to the largest
// size_t (strtoull saturates a larger one, flagging ERANGE).
std::optional<std::size_t> parse_limit(const char* text) {
  if (text[0] < '0' || text[0] > '9') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || value > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  return static_cast<std::size_t>(value);
}

std::size_t initial_limit() {
  const char* text = std::getenv(idle_limit_env());
  if (text == nullptr || text[0] == '\0') return kDefaultIdleLimit;
  return parse_limit(text).value_or(kDefaultIdleLimit);  // check_idle_limit_env() refuses it
}
}  // namespace

void check_idle_limit_env() {
  const char* text = std::getenv(idle_limit_env());
  if (text == nullptr || text[0] == '\0' || parse_limit(text)) return;
  throw ValueError(std::string(idle_limit_env()) + "='" + text +
                   "' is not a number of idle green contexts to keep: give a whole number from 0 to " +
                   std::to_string(std::numeric_limits<std::size_t>::max()) +
                   " (0 destroys contexts as they are dropped; unset, " + std::to_string(kDefaultIdleLimit) +
                   " are kept)");
}

const char* idle_limit_env() { return "TORCH_GREEN_CONTEXTS_IDLE_LIMIT"; }

LiveCounts live_counts() { return ContextRecycler::instance().counts(); }
void release_idle_contexts() { ContextRecycler::instance().release_all(); }
std::size_t idle_context_limit() { return ContextRecycler::instance().limit(); }
void set_idle_context_limit(std::size_t limit) { ContextRecycler::instance().set_limit(limit); }

bool RecycleKey::operator==(const RecycleKey& other) const noexcept {
  const bool same_sms = sm.size() == other.sm.size() &&
                        std::equal(sm.begin(), sm.end(), other.sm.begin(), [](const auto& a, const auto& b) {
                          return std::memcmp(&a, &b, sizeof(a)) == 0;
                        });
  return device == other.device && same_sms &&
         has_workqueue == other.has_workqueue && workqueue_scope == other.workqueue_scope &&
         concurrency_limit == other.concurrency_limit;
}

ContextRecycler::ContextRecycler() : limit_(initial_limit()) {
  pthread_atfork(&ContextRecycler::lock_before_fork, &ContextRecycler::unlock_after_fork,
                 &ContextRecycler::unlock_after_fork);
}

ContextRecycler& ContextRecycler::instance() {
  static ContextRecycler* recycler = new ContextRecycler();
  return *recycler;
}

void ContextRecycler::lock_before_fork() noexcept { instance().mutex_.lock(); }

void ContextRecycler::unlock_after_fork() noexcept { instance().mutex_.unlock(); }

ContextInUse::ContextInUse(const RecycleKey& key, ContextKind kind,
                           std::unique_ptr<ContextHandles> handles) noexcept
    : key_(key), kind_(kind), handles_(std::move(handles)) {}

ContextInUse& ContextInUse::operator=(ContextInUse&& other) noexcept {
  if (this != &other) {
    retire(false);
    key_ = other.key_;
    kind_ = other.kind_;
    handles_ = std::move(other.handles_);
  }
  return *this;
}

void ContextInUse::retire(bool reusable) noexcept {
  if (handles_ == nullptr) return;
  // What the recycler does not keep is destroyed here, after its lock is released.
  ContextRecycler::instance().release(key_, kind_, std::move(handles_), reusable).reset();
}

ContextInUse ContextRecycler::take(const RecycleKey& key, ContextKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    if (it->key == key) {
      const std::size_t streams = it->handles->stream_count();
      counts_.idle_streams -= streams;
      counts_.streams += streams;
      ++(kind == ContextKind::kUser ? counts_.contexts : counts_.internal_contexts);
      ContextInUse taken(key, kind, std::move(it->handles));
      idle_.erase(it);
      return taken;
    }
  }
  return ContextInUse();
}

ContextInUse ContextRecycler::adopt(const RecycleKey& key, ContextKind kind,
                                    std::unique_ptr<ContextHandles> handles) {
  {
    std::lock_guard<std::mutex> lock(mutex_);  // if locking fails, `handles` is destroyed uncounted
    ++(kind == ContextKind::kUser ? counts_.contexts : counts_.internal_contexts);
  }
  return ContextInUse(key, kind, std::move(handles));
}

void ContextRecycler::count_stream_created() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.streams;
}

std::unique_ptr<ContextHandles> ContextRecycler::release(const RecycleKey& key, ContextKind kind,
                                                         std::unique_ptr<ContextHandles> handles,
                                                         bool reusable) noexcept {
  std::list<Entry> node;  // allocated before the lock: a failure here changes nothing
  if (reusable) {
    try {
      node.push_back(Entry{key, nullptr});
    } catch (...) {
      reusable = false;  // no memory to keep it: it is destroyed instead
    }
  }
  std::list<Entry> evicted;  // destroyed after the lock is released (declared before it)
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t streams = handles->stream_count();
  --(kind == ContextKind::kUser ? counts_.contexts : counts_.internal_contexts);
  counts_.streams -= streams;
  if (!reusable || limit_ == 0) return handles;
  node.front().handles = std::move(handles);
  idle_.splice(idle_.begin(), node);
  counts_.idle_streams += streams;
  trim(evicted);
  return nullptr;
}

void ContextRecycler::trim(std::list<Entry>& evicted) noexcept {
  while (idle_.size() > limit_) {
    counts_.idle_streams -= idle_.back().handles->stream_count();
    evicted.splice(evicted.end(), idle_, std::prev(idle_.end()));
  }
}

void ContextRecycler::release_all() {
  std::list<Entry> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    evicted.splice(evicted.end(), idle_);
    counts_.idle_streams = 0;
  }
}

std::size_t ContextRecycler::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

void ContextRecycler::set_limit(std::size_t limit) {
  std::list<Entry> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = limit;
    trim(evicted);
  }
}

LiveCounts ContextRecycler::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  LiveCounts snapshot = counts_;
  snapshot.idle_contexts = idle_.size();
  return snapshot;
}

}  // namespace tgc
