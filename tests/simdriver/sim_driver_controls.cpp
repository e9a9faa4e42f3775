// The simulated driver's controls for tests (sim_driver.h): live handles, calls, failures on
// demand, and what the driver was asked.
#include <cstring>

#include "sim_driver.h"
#include "sim_driver_state.h"

using namespace simdriver;

extern "C" {

int tgc_sim_live(const char* kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = 0;
  if (std::strcmp(kind, "green_ctx") == 0) {
    for (GreenCtx* g : s.green_ctxs) n += g->alive;
  } else if (std::strcmp(kind, "stream") == 0) {
    for (Stream* st : s.streams) n += st->alive;
  } else if (std::strcmp(kind, "event") == 0) {
    for (Event* ev : s.events) n += ev->alive;
  } else if (std::strcmp(kind, "library") == 0) {
    n = static_cast<int>(s.libraries.size());
  } else if (std::strcmp(kind, "memory") == 0) {
    n = static_cast<int>(s.memories.size());
  } else if (std::strcmp(kind, "reservation") == 0) {
    n = static_cast<int>(s.reservations.size());
  } else if (std::strcmp(kind, "primary_retain") == 0) {
    n = s.primary_retains;
  }
  return n;
}

int tgc_sim_mapping_at(unsigned long long address, int* domain, int* accessible) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const auto& [start, mapping] : s.mappings) {
    if (address >= start && address < start + mapping.size) {
      *domain = mapping.memory->domain;
      *accessible = mapping.accessible;
      return 0;
    }
  }
  return -1;
}

int tgc_sim_misuse_count(void) { return state().misuse; }

void tgc_sim_fail_next(const char* name, int code, int skip) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.failures.push_back({name, code, skip});
}

void tgc_sim_clear_failures(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.failures.clear();
}

int tgc_sim_calls(const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.calls.find(name);
  return it == s.calls.end() ? 0 : it->second;
}

int tgc_sim_green_ctx_sms(void* green, int* out, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* g = static_cast<GreenCtx*>(green);
  if (!s.green_ctxs.count(g)) return -1;
  int n = static_cast<int>(g->desc.sms.size());
  for (int i = 0; i < n && i < capacity; ++i) out[i] = g->desc.sms[static_cast<std::size_t>(i)];
  return n;
}

int tgc_sim_last_split_params(unsigned* out, int max_groups) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = static_cast<int>(s.last_split_params.size());
  for (int i = 0; i < n && i < max_groups; ++i) {
    std::memcpy(out + 16 * i, &s.last_split_params[static_cast<std::size_t>(i)], 64);
  }
  return n;
}

int tgc_sim_green_ctx_workqueue(void* green, int* scope, int* limit) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto* g = static_cast<GreenCtx*>(green);
  if (!s.green_ctxs.count(g)) return -1;
  *scope = g->desc.has_wq ? g->desc.wq_scope : -1;
  *limit = g->desc.has_wq ? static_cast<int>(g->desc.wq_limit) : -1;
  return 0;
}

int tgc_sim_live_events(void** contexts, unsigned* flags, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = 0;
  for (Event* ev : s.events) {
    if (!ev->alive) continue;
    if (n < capacity) {
      contexts[n] = ev->green ? static_cast<void*>(&ev->green->context_tag) : static_cast<void*>(&g_primary_tag);
      flags[n] = ev->flags;
    }
    ++n;
  }
  return n;
}

int tgc_sim_wait_edges(void** waiting, void** recorded_on, int capacity) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int n = static_cast<int>(s.wait_edges.size());
  for (int i = 0; i < n && i < capacity; ++i) {
    waiting[i] = s.wait_edges[static_cast<std::size_t>(i)].waiting;
    recorded_on[i] = s.wait_edges[static_cast<std::size_t>(i)].recorded_on;
  }
  return n;
}

void tgc_sim_clear_wait_edges(void) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.wait_edges.clear();
}

}  // extern "C"
