// Device resources: how a CUdevResource this driver writes encodes what it stands for, the
// device's and a green context's SM resources, and descriptors made of resources.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "sim_driver_state.h"

namespace simdriver {

namespace {

constexpr std::uint32_t kMagic = 0x53494d52;  // "SIMR"

bool same_record(const Record& a, const Record& b) {
  return a.type == b.type && a.sms == b.sms && a.origin == b.origin && a.alignment == b.alignment &&
         a.flags == b.flags && a.locality == b.locality && a.split_id == b.split_id && a.device == b.device;
}

}  // namespace

// Like a real driver's, the encoding is a function of what the resource stands for: the same
// split of the same input gives the same bytes.
void write_resource(CUdevResource* out, const Record& record) {
  State& s = state();
  std::memset(out, 0, sizeof(*out));
  out->type = record.type;
  if (record.type == CU_DEV_RESOURCE_TYPE_INVALID) return;
  std::uint32_t id = 0;
  for (std::size_t i = 0; i < s.records.size() && id == 0; ++i) {
    if (same_record(s.records[i], record)) id = static_cast<std::uint32_t>(i + 1);
  }
  if (id == 0) {
    s.records.push_back(record);
    id = static_cast<std::uint32_t>(s.records.size());
  }
  std::memcpy(out->_internal_padding, &kMagic, 4);
  std::memcpy(out->_internal_padding + 4, &id, 4);
  if (record.type == CU_DEV_RESOURCE_TYPE_SM) {
    out->sm.smCount = static_cast<unsigned>(record.sms.size());
    if (s.config.version >= 13000) {
      out->sm.minSmPartitionSize = device_alignment();
      out->sm.smCoscheduledAlignment = record.alignment;
    }
    if (s.config.version >= 13010) out->sm.flags = record.flags & 0x1;
    if (s.config.version >= 13040) {
      out->sm.flags = record.flags;
      out->sm.localityDomainId = record.locality;
    }
  }
}

int split_id_of(const Record& input, const std::string& parameters) {
  State& s = state();
  std::string key = parameters + " of";
  for (int sm : input.sms) key += " " + std::to_string(sm);
  auto found = s.split_ids.find(key);
  if (found != s.split_ids.end()) return found->second;
  int id = static_cast<int>(s.split_ids.size()) + 1;
  s.split_ids.emplace(key, id);
  return id;
}

const Record* read_resource(const CUdevResource* in) {
  State& s = state();
  if (in == nullptr) return nullptr;
  std::uint32_t magic = 0, id = 0;
  std::memcpy(&magic, in->_internal_padding, 4);
  std::memcpy(&id, in->_internal_padding + 4, 4);
  if (magic != kMagic || id == 0 || id > s.records.size()) return nullptr;
  return &s.records[id - 1];
}

CUresult sim_cuDeviceGetDevResource(CUdevice device, CUdevResource* out, CUdevResourceType type) {
  ENTER("cuDeviceGetDevResource");
  if (device < 0 || device >= s.config.device_count) return CUDA_ERROR_INVALID_DEVICE;
  Record r;
  if (type == CU_DEV_RESOURCE_TYPE_SM) {
    r.type = CU_DEV_RESOURCE_TYPE_SM;
    for (int i = 0; i < s.config.sm_count; ++i) r.sms.push_back(i);
    r.origin = Origin::kDevice;
    r.device = device;
    r.alignment = device_alignment();
  } else if (type == CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG && s.config.version >= 13010) {
    r.type = CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG;
    write_resource(out, r);
    out->wqConfig.device = device;
    out->wqConfig.wqConcurrencyLimit = s.config.wq_limit;
    out->wqConfig.sharingScope = CU_WORKQUEUE_SCOPE_DEVICE_CTX;
    return CUDA_SUCCESS;
  } else {
    return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  }
  write_resource(out, r);
  return CUDA_SUCCESS;
}

CUresult sim_cuGreenCtxGetDevResource(CUgreenCtx green, CUdevResource* out, CUdevResourceType type) {
  ENTER("cuGreenCtxGetDevResource");
  auto* g = reinterpret_cast<GreenCtx*>(green);
  if (!valid_green(g)) return kInvalidHandle;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  Record r;
  r.type = CU_DEV_RESOURCE_TYPE_SM;
  r.sms = g->desc.sms;
  r.origin = Origin::kContext;
  r.device = g->device;
  r.alignment = g->desc.alignment;
  r.flags = g->desc.flags;
  r.locality = g->desc.locality;
  write_resource(out, r);
  return CUDA_SUCCESS;
}

CUresult sim_cuDevResourceGenerateDesc(CUdevResourceDesc* out, CUdevResource* resources, unsigned n) {
  ENTER("cuDevResourceGenerateDesc");
  if (out == nullptr || resources == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  auto desc = std::make_unique<Descriptor>();
  int sm_split = -1, sm_resources = 0;
  for (unsigned i = 0; i < n; ++i) {
    const Record* r = read_resource(&resources[i]);
    if (r == nullptr) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (r->type == CU_DEV_RESOURCE_TYPE_SM) {
      if (sm_resources++ > 0) {  // several SM resources: one split, one alignment
        if (r->split_id == 0 || r->split_id != sm_split || r->alignment != desc->alignment) {
          return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        }
      }
      if (desc->device >= 0 && desc->device != r->device) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
      desc->device = r->device;
      sm_split = r->split_id;
      desc->sms.insert(desc->sms.end(), r->sms.begin(), r->sms.end());
      desc->alignment = r->alignment;
      desc->flags = r->flags;
      desc->locality = r->locality;
    } else if (r->type == CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG) {
      if (desc->has_wq) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
      const auto& wq = resources[i].wqConfig;
      if (wq.sharingScope != CU_WORKQUEUE_SCOPE_DEVICE_CTX && wq.sharingScope != CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (wq.wqConcurrencyLimit == 0 || wq.wqConcurrencyLimit > s.config.wq_limit) return CUDA_ERROR_INVALID_VALUE;
      desc->has_wq = true;
      desc->wq_scope = wq.sharingScope;
      desc->wq_limit = wq.wqConcurrencyLimit;
    } else {
      return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    }
  }
  std::sort(desc->sms.begin(), desc->sms.end());
  *out = reinterpret_cast<CUdevResourceDesc>(desc.get());
  s.descriptors.push_back(std::move(desc));
  return CUDA_SUCCESS;
}

}  // namespace simdriver
