// Real-GPU check through the CUDA runtime: cudaGetDeviceProperties/cudaMemGetInfo totals and
// cudaMalloc until refused. Output: key=value lines. Build: nvcc -o cuda_runtime_limit this.cu
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const size_t chunk = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  size_t f = 0, t = 0;
  cudaMemGetInfo(&f, &t);
  printf("props_total_mib=%zu\nmeminfo_total_mib=%zu\nmeminfo_free_mib=%zu\n",
         prop.totalGlobalMem >> 20, t >> 20, f >> 20);
  if (argc > 2) return 0;  // "props" only
  void* blocks[4096];
  int n = 0;
  cudaError_t last = cudaSuccess;
  for (; n < 4096; ++n) {
    last = cudaMalloc(&blocks[n], chunk);
    if (last != cudaSuccess) break;
  }
  printf("malloc_blocks=%d\nmalloc_mib=%zu\nmalloc_error=%s\n", n, (n * chunk) >> 20,
         cudaGetErrorName(last));
  cudaGetLastError();
  for (int i = 0; i < n; ++i) cudaFree(blocks[i]);
  int again = 0;
  for (; again < n; ++again) {
    if (cudaMalloc(&blocks[again], chunk) != cudaSuccess) break;
  }
  printf("realloc_blocks=%d\n", again);
  return 0;
}
