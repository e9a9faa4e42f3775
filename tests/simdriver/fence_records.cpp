#include "fence_records.h"

#include <algorithm>

std::vector<void*> sorted(std::vector<void*> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<void*> live_event_contexts(const std::vector<void*>& already) {
  std::vector<void*> out(256);
  std::vector<unsigned> flags(256);
  out.resize(static_cast<std::size_t>(std::min(sim().live_events(out.data(), flags.data(), 256), 256)));
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(flags[i], cu::CU_EVENT_DISABLE_TIMING) << "event " << i;
  for (void* context : already) {
    auto found = std::find(out.begin(), out.end(), context);
    if (found != out.end()) out.erase(found);
  }
  return sorted(out);
}

std::vector<WaitEdge> wait_edges() {
  std::vector<void*> waiting(64), recorded_on(64);
  const int n = sim().wait_edges(waiting.data(), recorded_on.data(), 64);
  std::vector<WaitEdge> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(std::min(n, 64)); ++i) {
    out.emplace_back(waiting[i], recorded_on[i]);
  }
  return sorted_edges(out);
}

std::vector<WaitEdge> all_pairs(const std::vector<cu::CUstream>& waiting, const std::vector<cu::CUstream>& done) {
  std::vector<WaitEdge> out;
  for (cu::CUstream w : waiting)
    for (cu::CUstream d : done) out.emplace_back(w, d);
  return sorted_edges(out);
}

std::vector<WaitEdge> sorted_edges(std::vector<WaitEdge> edges) {
  std::sort(edges.begin(), edges.end());
  return edges;
}
