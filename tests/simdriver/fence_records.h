// What the simulated driver saw of the events and waits of StreamFences.
#pragma once

#include <utility>
#include <vector>

#include "sim_fixture.h"

std::vector<void*> sorted(std::vector<void*> values);

// The contexts of the events alive in the driver, less those in `already` (e.g. events that
// an earlier test's refused cuEventDestroy left behind). Every event was made without timing.
std::vector<void*> live_event_contexts(const std::vector<void*>& already = {});

// (waiting stream, stream the awaited event was last recorded on).
using WaitEdge = std::pair<void*, void*>;

// The driver's waits since it last cleared them, sorted.
std::vector<WaitEdge> wait_edges();

// Every stream of `waiting` waiting for every stream of `done`, sorted.
std::vector<WaitEdge> all_pairs(const std::vector<cu::CUstream>& waiting, const std::vector<cu::CUstream>& done);

std::vector<WaitEdge> sorted_edges(std::vector<WaitEdge> edges);
