// Which part of the fixed cost differs: our PTX kernels (driver JIT, or a ptxas cubin of the
// same PTX) against an nvcc kernel of torch's shape, all timed in one C++ harness the same
// way (spin, events, input rotation below 4x L2 when cold).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 lat.cu -lcuda -o lat
// Run:   ptxas -arch=sm_90 -O3 kernels_gpu.ptx -o k.cubin; ./lat kernels_gpu.ptx k.cubin > lat.json
// v: 0 nvcc (1 pack per thread, 128 threads), 1 our PTX (JIT) @128, 2 our cubin @128,
//    3 our PTX @256, 4 nvcc 2 packs per thread (f32), 5 our add_f32x4_u2 (JIT) @128, 6 its cubin.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <fstream>
#include <sstream>
#define CK(x) do { auto e_ = (x); if (e_ != 0) { fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)e_); exit(1);} } while (0)

__global__ void spin(unsigned long long ns) {
  unsigned long long s, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(s));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - s < ns);
}
template <int U>
__global__ void nv_add_f32(const float4* a, const float4* b, float4* c, int packs) {
  int base = blockIdx.x * 128 * U + threadIdx.x;
  float4 x[U], y[U];
#pragma unroll
  for (int k = 0; k < U; k++) { int p = base + k * 128; if (p < packs) { x[k] = a[p]; y[k] = b[p]; } }
#pragma unroll
  for (int k = 0; k < U; k++) { int p = base + k * 128; if (p < packs) c[p] = make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w); }
}
__global__ void nv_add_f16(const uint4* a, const uint4* b, uint4* c, int packs) {
  int p = blockIdx.x * 128 + threadIdx.x;
  if (p < packs) {
    uint4 x = a[p], y = b[p], z;
    const __half2* hx = (const __half2*)&x; const __half2* hy = (const __half2*)&y; __half2* hz = (__half2*)&z;
    for (int k = 0; k < 4; k++) hz[k] = __hadd2(hx[k], hy[k]);
    c[p] = z;
  }
}
static std::string slurp(const char* f) { std::ifstream i(f); std::stringstream s; s << i.rdbuf(); return s.str(); }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  std::string ptx = slurp(argv[1]);
  CUmodule mjit, mcub; CK(cuModuleLoadData(&mjit, ptx.c_str()));
  std::string cub = slurp(argv[2]);
  CK(cuModuleLoadData(&mcub, cub.data()));
  const char* names[] = {"add_f32x4", "add_f16x8_pack", "add_f32x4_u2"};
  CUfunction fj[3], fc[3];
  for (int i = 0; i < 3; i++) { CK(cuModuleGetFunction(&fj[i], mjit, names[i])); CK(cuModuleGetFunction(&fc[i], mcub, names[i])); }
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  size_t l2 = prop.l2CacheSize, cap = size_t(1) << 26;
  char *a, *b, *c; CK(cudaMalloc(&a, cap * 4)); CK(cudaMalloc(&b, cap * 4)); CK(cudaMalloc(&c, cap * 4));
  CK(cudaMemset(a, 0, cap * 4)); CK(cudaMemset(b, 0, cap * 4));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  printf("[\n");
  bool first = true;
  for (int warm = 0; warm < 2; warm++)
  for (int lg = 16; lg <= 22; lg++) {
    size_t n = size_t(1) << lg;
    for (int esz : {4, 2}) {
      size_t bytes = 3 * n * esz;
      size_t sets = warm ? 1 : std::max<size_t>(1, std::min((4 * l2 + bytes - 1) / bytes, cap * 4 / (n * esz)));
      for (int v = 0; v < 7; v++) {
        if (esz == 2 && (v == 4 || v == 5 || v == 6)) continue;
        std::vector<double> t;
        for (int i = 0; i < 203; i++) {
          size_t o = (i % sets) * n * esz;
          const char *pa = a + o, *pb = b + o; char* pc = c + o;
          unsigned long long nn = n;
          void* args[] = {&pa, &pb, &pc, &nn};
          int packs = int(n * esz / 16);
          spin<<<1, 1, 0, s>>>(50000ull);
          CK(cudaEventRecord(e0, s));
          int k = esz == 4 ? 0 : 1;
          if (v == 0) { if (esz == 4) nv_add_f32<1><<<(packs + 127) / 128, 128, 0, s>>>((const float4*)pa, (const float4*)pb, (float4*)pc, packs); else nv_add_f16<<<(packs + 127) / 128, 128, 0, s>>>((const uint4*)pa, (const uint4*)pb, (uint4*)pc, packs); }
          else if (v == 1) CK(cuLaunchKernel(fj[k], (packs + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, 0));
          else if (v == 2) CK(cuLaunchKernel(fc[k], (packs + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, 0));
          else if (v == 3) CK(cuLaunchKernel(fj[k], (packs + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, 0));
          else if (v == 4) nv_add_f32<2><<<(packs + 255) / 256, 128, 0, s>>>((const float4*)pa, (const float4*)pb, (float4*)pc, packs);
          else if (v == 5) CK(cuLaunchKernel(fj[2], (packs + 255) / 256, 1, 1, 128, 1, 1, 0, s, args, 0));
          else CK(cuLaunchKernel(fc[2], (packs + 255) / 256, 1, 1, 128, 1, 1, 0, s, args, 0));
          CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1));
          float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
          if (i >= 3) t.push_back(ms * 1e3);
        }
        printf("%s{\"warm\":%d,\"log\":%d,\"esz\":%d,\"v\":%d,\"us\":%.3f}\n", first ? "" : ",", warm, lg, esz, v, med(t));
        first = false;
      }
    }
  }
  printf("]\n");
}
