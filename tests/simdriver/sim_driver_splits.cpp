// Splits of an SM resource: by count (cuDevSmResourceSplitByCount, every version) and by group
// parameters (cuDevSmResourceSplit, 13.1+), following the documented rules.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim_driver_state.h"

namespace simdriver {

namespace {

// Chunks of `size` co-scheduled SMs (each within one GPC) from `pool`, in pool order.
std::vector<std::vector<int>> chunks(const std::vector<int>& pool, unsigned size) {
  std::map<int, std::vector<int>> by_gpc;
  for (int sm : pool) by_gpc[state().gpc_of_sm[sm]].push_back(sm);
  std::vector<std::vector<int>> out;
  for (auto& [gpc, sms] : by_gpc) {
    for (std::size_t i = 0; i + size <= sms.size(); i += size) {
      out.emplace_back(sms.begin() + static_cast<long>(i), sms.begin() + static_cast<long>(i + size));
    }
  }
  return out;
}

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::set<int> drop(b.begin(), b.end());
  std::vector<int> out;
  for (int x : a)
    if (!drop.count(x)) out.push_back(x);
  return out;
}

// A split output of `input`: the SMs `sms`, co-scheduled `alignment` at a time.
Record piece_of(const Record& input, const std::vector<int>& sms, unsigned alignment, int split_id) {
  Record r;
  r.type = CU_DEV_RESOURCE_TYPE_SM;
  r.sms = sms;
  r.origin = Origin::kSplitOutput;
  r.device = input.device;
  r.alignment = alignment;
  r.split_id = split_id;
  return r;
}

// What a split left of `input`: an INVALID resource when nothing is, co-scheduled in pairs.
void write_rest(CUdevResource* out, const std::vector<int>& sms, const Record& input, int split_id) {
  Record r = piece_of(input, sms, 2, split_id);
  if (sms.empty()) r.type = CU_DEV_RESOURCE_TYPE_INVALID;
  write_resource(out, r);
}

}  // namespace


CUresult sim_cuDevSmResourceSplitByCount(CUdevResource* result, unsigned* nb, const CUdevResource* input,
                                         CUdevResource* remaining, unsigned flags, unsigned min_count) {
  ENTER("cuDevSmResourceSplitByCount");
  const Record* in = read_resource(input);
  if (in == nullptr || nb == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (in->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  if (in->origin == Origin::kSplitOutput) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  if (flags & ~3u) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE) && s.config.cc_major < 9) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Record input_copy = *in;  // write_resource may grow the record table
  const unsigned gran = (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) ? 2u : device_alignment();
  const unsigned total = static_cast<unsigned>(input_copy.sms.size());
  unsigned size = std::max((std::max(min_count, 1u) + gran - 1) / gran * gran, gran);
  std::vector<std::vector<int>> groups;
  if (size > total && min_count <= total && min_count > 0) {
    groups.push_back(input_copy.sms);  // only the whole input has that many SMs
  } else {
    std::vector<std::vector<int>> pieces = chunks(input_copy.sms, gran);
    std::size_t per_group = size / gran;
    for (std::size_t i = 0; i + per_group <= pieces.size(); i += per_group) {
      std::vector<int> g;
      for (std::size_t k = 0; k < per_group; ++k) g.insert(g.end(), pieces[i + k].begin(), pieces[i + k].end());
      std::sort(g.begin(), g.end());
      groups.push_back(g);
    }
  }
  if (result == nullptr) {
    *nb = static_cast<unsigned>(groups.size());
    return CUDA_SUCCESS;
  }
  if (groups.empty()) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  unsigned made = std::min<unsigned>(*nb, static_cast<unsigned>(groups.size()));
  std::vector<int> used;
  int split_id = split_id_of(input_copy, "by-count " + std::to_string(flags) + " " +
                                             std::to_string(min_count) + " " + std::to_string(made));
  for (unsigned i = 0; i < made; ++i) {
    write_resource(&result[i], piece_of(input_copy, groups[i], gran, split_id));
    used.insert(used.end(), groups[i].begin(), groups[i].end());
  }
  *nb = made;
  if (remaining) write_rest(remaining, minus(input_copy.sms, used), input_copy, split_id);
  return CUDA_SUCCESS;
}

CUresult sim_cuDevSmResourceSplit(CUdevResource* result, unsigned nb, const CUdevResource* input,
                                  CUdevResource* remainder, unsigned flags,
                                  CU_DEV_SM_RESOURCE_GROUP_PARAMS* params) {
  ENTER("cuDevSmResourceSplit");
  const Record* in = read_resource(input);
  if (in == nullptr || params == nullptr || nb == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (in->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  if (in->origin == Origin::kSplitOutput) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  const Record input_copy = *in;
  s.last_split_params.assign(params, params + nb);
  const unsigned known_flags = CU_DEV_SM_RESOURCE_GROUP_BACKFILL |
                               (s.config.version >= 13040 ? CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID : 0u);
  const unsigned input_count = static_cast<unsigned>(input_copy.sms.size());
  for (unsigned i = 0; i < nb; ++i) {
    const auto& p = params[i];
    for (unsigned word : p.reserved)
      if (word != 0) return CUDA_ERROR_INVALID_VALUE;
    if (s.config.version < 13040 && p.localityDomainId != 0) return CUDA_ERROR_INVALID_VALUE;
    if (p.flags & ~known_flags) return CUDA_ERROR_INVALID_VALUE;
    unsigned cs = p.coscheduledSmCount ? p.coscheduledSmCount : device_alignment();
    if (cs % 2 || cs > max_coscheduled()) return CUDA_ERROR_INVALID_VALUE;
    if (p.smCount != 0) {
      if (p.smCount < 2 || p.smCount > input_count || p.smCount % 2) return CUDA_ERROR_INVALID_VALUE;
      if (!(p.flags & CU_DEV_SM_RESOURCE_GROUP_BACKFILL) && p.smCount % cs) return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::vector<int> pool = input_copy.sms;
  std::vector<std::vector<int>> assigned(nb);
  for (unsigned i = 0; i < nb; ++i) {
    auto& p = params[i];
    unsigned cs = p.coscheduledSmCount ? p.coscheduledSmCount : device_alignment();
    bool backfill = p.flags & CU_DEV_SM_RESOURCE_GROUP_BACKFILL;
    bool local = p.flags & CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID;
    std::vector<int> preferred = pool;
    if (local) {
      preferred.clear();
      for (int sm : pool)
        if (domain_of_sm(sm) == static_cast<int>(p.localityDomainId)) preferred.push_back(sm);
      if (preferred.empty()) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    std::vector<std::vector<int>> pieces = chunks(preferred, cs);
    unsigned wanted_chunks = p.smCount ? p.smCount / cs : static_cast<unsigned>(pieces.size());
    if (!backfill && p.smCount && pieces.size() < wanted_chunks) {
      return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    std::vector<int> group;
    for (unsigned k = 0; k < wanted_chunks && k < pieces.size(); ++k)
      group.insert(group.end(), pieces[k].begin(), pieces[k].end());
    if (backfill) {  // fill up: the domain first, then the rest of the pool
      unsigned target = p.smCount ? p.smCount : static_cast<unsigned>(pool.size());
      for (const std::vector<int>* source : {&preferred, &pool}) {
        for (int sm : minus(*source, group)) {
          if (group.size() >= target) break;
          group.push_back(sm);
        }
      }
    }
    std::sort(group.begin(), group.end());
    if (result != nullptr && (group.empty() || group.size() < cs)) {
      return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    }
    if (p.smCount == 0) p.smCount = static_cast<unsigned>(group.size());  // discovery
    pool = minus(pool, group);
    assigned[i] = group;
  }
  if (result == nullptr) return CUDA_SUCCESS;  // a dry run
  std::string signature = "split";
  for (unsigned i = 0; i < nb; ++i) {
    signature += " " + std::to_string(params[i].smCount) + "/" + std::to_string(params[i].coscheduledSmCount) +
                 "/" + std::to_string(params[i].preferredCoscheduledSmCount) + "/" +
                 std::to_string(params[i].flags) + "/" + std::to_string(params[i].localityDomainId);
  }
  int split_id = split_id_of(input_copy, signature);
  for (unsigned i = 0; i < nb; ++i) {
    const unsigned alignment = params[i].coscheduledSmCount ? params[i].coscheduledSmCount : device_alignment();
    Record r = piece_of(input_copy, assigned[i], alignment, split_id);
    r.flags = params[i].flags;
    r.locality = params[i].localityDomainId;
    write_resource(&result[i], r);
  }
  if (remainder) write_rest(remainder, pool, input_copy, split_id);
  return CUDA_SUCCESS;
}

}  // namespace simdriver
