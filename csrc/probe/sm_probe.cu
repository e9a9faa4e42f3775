// Source of the SM-id probe. The library embeds the PTX made from it (sm_probe_ptx.h), so
// building the package needs no nvcc; scripts/regenerate_probe_ptx.sh remakes that header.
//
// Every block records the SM it ran on, then keeps its SM busy for `spin_ns` nanoseconds so
// that the block scheduler has to spread the remaining blocks over every SM it may use.
extern "C" __global__ void tgc_sm_probe(unsigned int* sm_ids, unsigned long long spin_ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  if (threadIdx.x == 0) {
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    sm_ids[blockIdx.x] = smid;
  }
  unsigned long long now = start;
  while (now - start < spin_ns) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}
