// The simulated driver's state: its configuration, the handles it made, the calls made to it
// and the failures asked for.
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "sim_driver_state.h"

namespace simdriver {

State& state() {
  static State s;
  return s;
}

thread_local std::vector<CUcontext> t_context_stack;
int g_primary_tag = 0;

CUresult enter(const char* name) {
  State& s = state();
  s.calls[name]++;
  for (auto it = s.failures.begin(); it != s.failures.end(); ++it) {
    if (it->name != name) continue;
    if (it->skip > 0) {
      --it->skip;
      return CUDA_SUCCESS;
    }
    int code = it->code;
    s.failures.erase(it);
    return code;
  }
  return CUDA_SUCCESS;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : fallback;
}

unsigned device_alignment() { return state().config.cc_major >= 9 ? 8u : 2u; }
unsigned max_coscheduled() { return state().config.cc_major >= 9 ? 32u : 2u; }

int domain_of_sm(int sm) {
  const Config& c = state().config;
  return c.locality_domains > 0 ? state().gpc_of_sm[sm] % c.locality_domains : 0;
}

namespace {

template <typename Handle>
bool alive_in(Handle* handle, const std::set<Handle*>& made) {
  if (handle == nullptr || !made.count(handle) || !handle->alive) {
    ++state().misuse;
    return false;
  }
  return true;
}

}  // namespace

bool valid_green(GreenCtx* g) { return alive_in(g, state().green_ctxs); }
bool valid_stream(Stream* st) { return alive_in(st, state().streams); }
bool valid_event(Event* ev) { return alive_in(ev, state().events); }

CUresult detached(const Stream* st) {
  if (st->green && !st->green->alive) return state().config.version >= 13010 ? kStreamDetached : kInvalidHandle;
  return CUDA_SUCCESS;
}

GreenCtx* green_of_context(CUcontext ctx) {
  for (GreenCtx* g : state().green_ctxs)
    if (reinterpret_cast<CUcontext>(&g->context_tag) == ctx) return g;
  return nullptr;
}

bool hidden(const char* symbol) {
  const char* list = std::getenv("TGC_SIM_HIDE");
  if (list == nullptr) return false;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == symbol) return true;
  }
  return false;
}

bool read_config(Config* config) {
  Config& c = *config;
  c.version = env_int("TGC_SIM_DRIVER_VERSION", c.version);
  c.sm_count = env_int("TGC_SIM_SM_COUNT", c.sm_count);
  c.cc_major = env_int("TGC_SIM_CC_MAJOR", c.cc_major);
  c.locality_domains = env_int("TGC_SIM_LOCALITY_DOMAINS", c.locality_domains);
  c.device_count = env_int("TGC_SIM_DEVICE_COUNT", c.device_count);
  c.wq_limit = static_cast<unsigned>(env_int("TGC_SIM_WQ_LIMIT", static_cast<int>(c.wq_limit)));
  if (const char* gpcs = std::getenv("TGC_SIM_GPC_SIZES")) {
    c.gpc_sizes.clear();
    std::stringstream in(gpcs);
    std::string item;
    while (std::getline(in, item, ',')) c.gpc_sizes.push_back(std::atoi(item.c_str()));
  } else if (c.sm_count != 132) {
    c.gpc_sizes.assign(static_cast<std::size_t>(c.sm_count / 16), 16);
    if (c.sm_count % 16) c.gpc_sizes.push_back(c.sm_count % 16);
  }
  int sum = 0;
  for (int g : c.gpc_sizes) sum += g;
  return sum == c.sm_count;
}

}  // namespace simdriver
