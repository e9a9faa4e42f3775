// Splits GPU 0 into a 16-SM partition and the rest, runs a matmul on a stream of each, and
// reads back which SMs each stream's work ran on. Exit status 0 when the results are right
// and the partitions share no SM.
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>
#include <torch_green_contexts/torch.h>

#include <cstdio>
#include <exception>
#include <set>
#include <vector>

int main() {
  try {
    if (!torch::cuda::is_available()) {
      std::fprintf(stderr, "no CUDA device\n");
      return 2;
    }
    torch::Tensor a = torch::randn({2048, 2048}, torch::kCUDA);  // also makes the primary context
    torch::Tensor expected = torch::mm(a, a);
    torch::cuda::synchronize();

    tgc::SmPartition whole = tgc::SmPartition::from_device(0);
    tgc::SplitResult parts = tgc::split(whole, {tgc::group(16), tgc::group(0, 0, /*backfill=*/true)});
    auto contexts = tgc::GreenContext::create_all(0, {&parts.groups[0], &parts.groups[1]}, std::nullopt);

    std::vector<std::set<int>> sms;
    bool ok = true;
    for (const auto& context : contexts) {
      c10::cuda::CUDAStream stream = tgc::torch_stream(context);
      torch::Tensor ids = torch::full({4 * static_cast<long>(whole.sm_count())}, -1,
                                      torch::dtype(torch::kInt32).device(torch::kCUDA));
      torch::cuda::synchronize();
      torch::Tensor result;
      {
        c10::cuda::CUDAStreamGuard guard(stream);
        result = torch::mm(a, a);
        tgc::launch_sm_probe(reinterpret_cast<tgc::abi::CUstream>(stream.stream()),
                             static_cast<tgc::abi::CUdeviceptr>(reinterpret_cast<std::uintptr_t>(ids.data_ptr())),
                             static_cast<unsigned>(ids.numel()), 1024, 20000);
      }
      stream.synchronize();
      const bool right = torch::allclose(result, expected, 1e-3, 1e-3);
      torch::Tensor host = ids.cpu();
      std::set<int> seen(host.data_ptr<int>(), host.data_ptr<int>() + host.numel());
      std::printf("green context: %u SMs granted, matmul %s, work ran on %zu SMs\n", context->sm_count(),
                  right ? "right" : "WRONG", seen.size());
      ok = ok && right && !seen.count(-1) && seen.size() == context->sm_count();
      sms.push_back(seen);
    }
    int shared = 0;
    for (int sm : sms[0]) shared += static_cast<int>(sms[1].count(sm));
    std::printf("SMs shared by the two partitions: %d\n", shared);
    ok = ok && shared == 0;
    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
