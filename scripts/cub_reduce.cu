// CUB as a peer of the custom section's sum: times cub::DeviceReduce::Sum over n
// f32 the way the report times the example's block_sum, and prints one JSON line
// per n on stdout.
//
// Method (the same as the report's rows and cub_peer.cu): CUDA events around each
// call, queued behind a spin kernel so that they time the kernels and not the
// host's launch path; 5 warm-up calls, then the median of 200/60/25 timed calls
// (by bytes, as the report); one input set (nothing rotated: the report's sizes,
// 2^24 and 2^28, are past L2 or nearly so). Temporary storage is sized for the
// largest n and allocated once. GB/s counts the 4 * n bytes read.
//
// Verification: the inputs are integers uniform in -8..=8, so the f32 sum is
// exact in any order; "sum" is CUB's total, "expected" the host's sum in double.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 cub_reduce.cu -o cub_reduce  (the report does this)
// Run:   cub_reduce LOG2...   (default: 24 28)
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cub_common.cuh"

int main(int argc, char** argv) {
  std::vector<int> logs;
  for (int i = 1; i < argc; i++) logs.push_back(atoi(argv[i]));
  if (logs.empty()) logs = {24, 28};
  const double spin_ns = 50e3;
  size_t max_n = 0;
  for (int k : logs) max_n = std::max(max_n, size_t(1) << k);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *in, *out;
  CHECK(cudaMalloc(&in, max_n * sizeof(float)));
  CHECK(cudaMalloc(&out, sizeof(float)));
  // Temporary storage: the largest any of the sizes asks for, allocated once.
  size_t temp_bytes = 0;
  for (int k : logs) {
    size_t bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in, out, int(size_t(1) << k), s));
    temp_bytes = std::max(temp_bytes, bytes);
  }
  void* temp;
  CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  std::vector<float> host(max_n);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> dist(-8, 8);
  for (size_t i = 0; i < max_n; i++) host[i] = float(dist(rng));
  CHECK(cudaMemcpyAsync(in, host.data(), max_n * sizeof(float), cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));

  for (int k : logs) {
    const size_t n = size_t(1) << k, bytes = 4 * n;
    const int reps = bytes <= (1u << 24) ? 200 : (bytes <= (1u << 28) ? 60 : 25);
    double expected = 0;
    for (size_t i = 0; i < n; i++) expected += host[i];
    size_t tb = temp_bytes;
    for (int i = 0; i < 5; i++) CHECK(cub::DeviceReduce::Sum(temp, tb, in, out, int(n), s));
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
      spin<<<1, 1, 0, s>>>((unsigned long long)spin_ns);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(e0, s));
      tb = temp_bytes;
      CHECK(cub::DeviceReduce::Sum(temp, tb, in, out, int(n), s));
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms);
    }
    float sum = 0;
    CHECK(cudaMemcpyAsync(&sum, out, sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    const double ms = median(t);
    printf("{\"n\": %zu, \"median_us\": %.4f, \"gbps\": %.2f, \"sum\": %.1f, \"expected\": %.1f, \"cub_version\": %d}\n", n,
           ms * 1e3, bytes / (ms * 1e-3) / 1e9, double(sum), expected, int(CUB_VERSION));
    fflush(stdout);
  }
  CHECK(cudaFree(temp));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
