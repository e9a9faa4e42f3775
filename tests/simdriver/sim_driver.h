// Control interface of the simulated CUDA driver (libtgc_simdriver.so), for tests.
//
// The library exports the driver entry points the core uses (cuInit, cuDriverGetVersion,
// cuGetProcAddress_v2 and, through it, everything in the core's table). It is configured by
// environment variables read at cuInit:
//   TGC_SIM_DRIVER_VERSION   12040 | 12050 | 13000 | 13010 | 13040   (default 13040)
//   TGC_SIM_SM_COUNT         SMs of device 0 (default 132)
//   TGC_SIM_GPC_SIZES        comma-separated SMs per GPC, summing to the SM count
//                            (default 18,18,18,18,18,18,16,8: uneven, like Hopper's)
//   TGC_SIM_CC_MAJOR         compute capability major (default 9)
//   TGC_SIM_LOCALITY_DOMAINS locality domains, GPCs dealt round-robin (default 2; 13.4)
//   TGC_SIM_FAIL_INIT        a CUresult cuInit returns (e.g. 100, no device)
//   TGC_SIM_WQ_LIMIT         the device's default workqueue concurrency limit (default 128)
//   TGC_SIM_HIDE             comma-separated entry points cuGetProcAddress does not find,
//                            whatever the version (a driver that lacks what it claims)
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Live handles by kind: "green_ctx", "stream", "event", "library", "memory" (cuMemCreate's, until
// released and unmapped), "reservation" (cuMemAddressReserve's) and "primary_retain" (retains of
// the primary context not yet released).
int tgc_sim_live(const char* kind);
// The memory mapped at `address`: its locality domain (-1: the whole device) and whether
// cuMemSetAccess made it accessible. Returns 0, or -1 when nothing is mapped there.
int tgc_sim_mapping_at(unsigned long long address, int* domain, int* accessible);
// Calls on destroyed or unknown handles seen so far (use after destroy, bad handles).
int tgc_sim_misuse_count(void);
// Make the (skip+1)-th next call of entry point `name` return `code` (once).
void tgc_sim_fail_next(const char* name, int code, int skip);
// Clear pending failures.
void tgc_sim_clear_failures(void);
// How many times entry point `name` was called.
int tgc_sim_calls(const char* name);
// The SM ids of a green context (returns how many; writes at most `capacity`).
int tgc_sim_green_ctx_sms(void* green_ctx, int* out, int capacity);
// The last cuDevSmResourceSplit's group parameters, as 16 unsigned ints per group.
int tgc_sim_last_split_params(unsigned* out, int max_groups);
// The workqueue configuration of a green context: scope, limit (-1 if none).
int tgc_sim_green_ctx_workqueue(void* green_ctx, int* scope, int* limit);
// The live events' contexts (CUcontext handles) and creation flags, in no particular order.
// Returns how many events live; writes at most `capacity` of each.
int tgc_sim_live_events(void** contexts, unsigned* flags, int capacity);
// Every cuStreamWaitEvent since the last clear, in call order: the waiting stream and the
// stream of the event's last recording before the wait (null: never recorded). Returns how
// many; writes at most `capacity` of each.
int tgc_sim_wait_edges(void** waiting, void** recorded_on, int capacity);
void tgc_sim_clear_wait_edges(void);

#ifdef __cplusplus
}
#endif
