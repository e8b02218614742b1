// CUB as a peer: times cub::DeviceTransform::Transform(c = a + b) the way the
// report times the project's own kernels, and prints JSON on stdout.
//
// Method (the same as the report's rows and peers.py): CUDA events around each
// call, queued behind a spin kernel so that they time the kernel and not the host's
// launch path; median of many after a warm-up; disjoint input sets rotated when one
// set would fit in 4x the L2. GB/s counts 3 * n * element size per add.
//
// Verification: every timed size is compared in full with a host reference
// (f32: IEEE add; f16: the exact sum in double rounded once; bf16: the f32 sum
// rounded once, which is the correctly rounded bf16 sum), and one sample per
// dtype (n = 2^20 + 3, random and special values) is written to
// OUT/cub_sample_<dtype>.bin as a, b, c back to back for the report to check
// against gpukern's own CPU reference.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 cub_peer.cu -o cub_peer  (run.sh does this)
// Run:   cub_peer MIN_LOG2 MAX_LOG2 OUT_DIR
#include <cub/device/device_transform.cuh>
#include <cuda/std/functional>
#include <cuda/std/tuple>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <string>
#include <vector>

#include "cub_common.cuh"

// Host-side bit conversions and references.
static float f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

template <class T> struct Traits;
template <> struct Traits<float> {
  using Bits = uint32_t;
  static const char* name() { return "f32"; }
  static Bits from_f32(float f) { Bits u; memcpy(&u, &f, 4); return u; }
  static Bits add(Bits x, Bits y) {
    float a, b;
    memcpy(&a, &x, 4);
    memcpy(&b, &y, 4);
    return from_f32(a + b);
  }
  static bool is_nan(Bits x) { return (x & 0x7fffffffu) > 0x7f800000u; }
};
template <> struct Traits<__half> {
  using Bits = uint16_t;
  static const char* name() { return "f16"; }
  static Bits from_f32(float f) { return __half_as_ushort(__float2half_rn(f)); }
  static Bits add(Bits x, Bits y) {
    // Two f16 sum exactly in double (at most 40 significant bits); one rounding.
    double s = double(f16_to_f32(x)) + double(f16_to_f32(y));
    return __half_as_ushort(__double2half(s));
  }
  static bool is_nan(Bits x) { return (x & 0x7fff) > 0x7c00; }
};
template <> struct Traits<__nv_bfloat16> {
  using Bits = uint16_t;
  static const char* name() { return "bf16"; }
  static Bits from_f32(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
  static Bits add(Bits x, Bits y) { return from_f32(bf16_to_f32(x) + bf16_to_f32(y)); }
  static bool is_nan(Bits x) { return (x & 0x7fff) > 0x7f80; }
};

template <class T> static bool same(typename Traits<T>::Bits x, typename Traits<T>::Bits y) {
  return x == y || (Traits<T>::is_nan(x) && Traits<T>::is_nan(y));
}

template <class T> static void launch_add(const T* a, const T* b, T* c, int64_t n, cudaStream_t s) {
  CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(a, b), c, n, cuda::std::plus<>{}, s));
}

template <class T>
static void run(int min_log2, int max_log2, int warm_max_log2, const std::string& out_dir, double spin_ns, std::string& json, bool& first) {
  using B = typename Traits<T>::Bits;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const size_t l2 = prop.l2CacheSize, size = sizeof(T);
  const size_t cap = std::max(size_t(1) << max_log2, 8 * l2 / (3 * size));
  std::vector<B> ha(cap), hb(cap), hc(cap);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-64.f, 64.f);
  for (size_t i = 0; i < cap; i++) {
    ha[i] = Traits<T>::from_f32(dist(rng));
    hb[i] = Traits<T>::from_f32(dist(rng));
  }
  T *a, *b, *c;
  CHECK(cudaMalloc(&a, cap * size));
  CHECK(cudaMalloc(&b, cap * size));
  CHECK(cudaMalloc(&c, cap * size));
  // Every copy and fill goes on the timing stream and is waited for: the stream
  // is non-blocking, so work on the legacy stream would not be ordered with it.
  cudaStream_t s;
  const char* which = getenv("CUB_PEER_STREAM");
  const bool legacy = which && std::string(which) == "legacy";
  if (legacy) s = cudaStreamLegacy; else CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemcpyAsync(a, ha.data(), cap * size, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(b, hb.data(), cap * size, cudaMemcpyHostToDevice, s));
  CHECK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  // Cold rows (input sets rotated below 4x L2) for min..max, then warm rows (one
  // set, resident in L2 after the warm-up) for min..warm_max.
  const int last = max_log2 + std::max(0, warm_max_log2 - min_log2 + 1);
  for (int j = min_log2; j <= last; j++) {
    const bool warm = j > max_log2;
    const int k = warm ? min_log2 + (j - max_log2 - 1) : j;
    const size_t n = size_t(1) << k, bytes = 3 * n * size;
    const size_t sets = warm ? 1 : std::max<size_t>(1, std::min((4 * l2 + bytes - 1) / bytes, cap / n));
    const int reps = bytes <= (1u << 24) ? 200 : (bytes <= (1u << 28) ? 60 : 25);
    // Verify set 0 in full against the host reference.
    CHECK(cudaMemsetAsync(c, 0xA5, n * size, s));
    launch_add(a, b, c, n, s);
    CHECK(cudaMemcpyAsync(hc.data(), c, n * size, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) ok = same<T>(hc[i], Traits<T>::add(ha[i], hb[i]));
    for (int i = 0; i < 5; i++) launch_add(a + (i % sets) * n, b + (i % sets) * n, c + (i % sets) * n, n, s);
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
      const size_t o = (i % sets) * n;
      spin<<<1, 1, 0, s>>>((unsigned long long)spin_ns);
      CHECK(cudaEventRecord(e0, s));
      launch_add(a + o, b + o, c + o, n, s);
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms);
    }
    const double ms = median(t);
    char row[256];
    snprintf(row, sizeof row, "%s{\"dtype\": \"%s\", \"n\": %zu, \"median_us\": %.4f, \"gbps\": %.2f, \"input_sets\": %zu, \"warm\": %s, \"verified\": %s}",
             first ? "" : ", ", Traits<T>::name(), n, ms * 1e3, bytes / (ms * 1e-3) / 1e9, sets, warm ? "true" : "false",
             ok ? "true" : "false");
    json += row;
    first = false;
  }
  // The sample for the report's own reference: random bits and specials, odd n.
  const size_t n = (size_t(1) << 20) + 3;
  std::vector<B> sa(n), sb(n), sc(n);
  const B specials16[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3c00};
  const B specialsb[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x3f80};
  for (size_t i = 0; i < n; i++) {
    if (sizeof(B) == 4) {
      sa[i] = B(rng());
      sb[i] = B(rng());
    } else if (i % 4 == 0) {
      const B* sp = std::is_same<T, __half>::value ? specials16 : specialsb;
      sa[i] = sp[(i / 4) % 12];
      sb[i] = sp[(i / 48) % 12];
    } else {
      sa[i] = B(rng());
      sb[i] = B(rng());
    }
  }
  CHECK(cudaMemcpyAsync(a, sa.data(), n * size, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(b, sb.data(), n * size, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemsetAsync(c, 0xA5, n * size, s));
  launch_add(a, b, c, n, s);
  CHECK(cudaMemcpyAsync(sc.data(), c, n * size, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  std::string path = out_dir + "/cub_sample_" + Traits<T>::name() + ".bin";
  FILE* f = fopen(path.c_str(), "wb");
  if (f) {
    fwrite(sa.data(), size, n, f);
    fwrite(sb.data(), size, n, f);
    fwrite(sc.data(), size, n, f);
    fclose(f);
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  if (!legacy) CHECK(cudaStreamDestroy(s));
}

int main(int argc, char** argv) {
  const int min_log2 = argc > 1 ? atoi(argv[1]) : 10, max_log2 = argc > 2 ? atoi(argv[2]) : 28;
  const std::string out_dir = argc > 3 ? argv[3] : ".";
  const int warm_max_log2 = argc > 4 ? atoi(argv[4]) : min_log2 - 1;
  const double spin_ns = 50e3;
  int cub = CUB_VERSION, rt = 0;
  CHECK(cudaRuntimeGetVersion(&rt));
  std::string json = "{\"cub_version\": " + std::to_string(cub) + ", \"cuda_runtime\": " + std::to_string(rt) + ", \"rows\": [";
  bool first = true;
  run<float>(min_log2, max_log2, warm_max_log2, out_dir, spin_ns, json, first);
  run<__half>(min_log2, max_log2, warm_max_log2, out_dir, spin_ns, json, first);
  run<__nv_bfloat16>(min_log2, max_log2, warm_max_log2, out_dir, spin_ns, json, first);
  json += "]}";
  printf("%s\n", json.c_str());
  return 0;
}
