// Host emulation of the CUDA C the `nvrtc` backend generates (issue 13,
// "proof without a GPU"): the same source, compiled by g++ with this
// header first, runs on CPU tensors. Each CUDA thread of a block is a host
// thread; blocks run one after another (so `__shared__` arrays are
// function statics shared by the block's threads); `__syncthreads` is a
// barrier of the block and `__shfl_down_sync` an exchange through memory
// between the 32 threads of a warp, with a barrier of the warp around it.
// Only what cuda_codegen.cpp emits is provided; C headers only, so that a
// kernel compiles in a fraction of a second.
#pragma once

#include <math.h>
#include <pthread.h>
#include <string.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

struct tj_emu_dim3 {
  unsigned x, y, z;
};
static thread_local tj_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

struct tj_emu_block {
  pthread_barrier_t all;
  pthread_barrier_t warps[32];
  unsigned char slots[1024 * 8];  // one 8-byte slot per thread
};
static thread_local tj_emu_block* tj_emu_current;

inline void __syncthreads() { pthread_barrier_wait(&tj_emu_current->all); }

template <class T>
T __shfl_down_sync(unsigned, T value, unsigned delta) {
  static_assert(sizeof(T) <= 8, "one slot per thread");
  tj_emu_block& b = *tj_emu_current;
  pthread_barrier_t* warp = &b.warps[threadIdx.x / 32];
  memcpy(&b.slots[threadIdx.x * 8], &value, sizeof(T));
  pthread_barrier_wait(warp);
  T out = value;
  if ((threadIdx.x % 32) + delta < 32) memcpy(&out, &b.slots[(threadIdx.x + delta) * 8], sizeof(T));
  pthread_barrier_wait(warp);
  return out;
}

inline float __int_as_float(int bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
inline float __uint_as_float(unsigned bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline double __longlong_as_double(long long bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

typedef void (*tj_emu_kernel)(char* const*, const long long*, const long long*);

struct tj_emu_launch_args {
  tj_emu_kernel kernel;
  char* const* ptrs;
  const long long* sizes;
  const long long* strides;
  long long blocks;
  int threads, thread;
  tj_emu_block* block;
};

inline void* tj_emu_thread(void* p) {
  const tj_emu_launch_args& a = *static_cast<tj_emu_launch_args*>(p);
  tj_emu_current = a.block;
  threadIdx.x = static_cast<unsigned>(a.thread);
  blockDim.x = static_cast<unsigned>(a.threads);
  gridDim.x = static_cast<unsigned>(a.blocks);
  for (long long b = 0; b < a.blocks; ++b) {
    blockIdx.x = static_cast<unsigned>(b);
    a.kernel(a.ptrs, a.sizes, a.strides);
    pthread_barrier_wait(&a.block->all);  // the block is done before the next one reuses __shared__
  }
  return nullptr;
}

// kernel<<<blocks, threads>>>(ptrs, sizes, strides); threads a multiple of 32, at most 1024.
// Two launches of one kernel must not overlap: its __shared__ arrays are statics.
inline void tj_emu_launch(tj_emu_kernel kernel, char* const* ptrs, const long long* sizes, const long long* strides,
                          long long blocks, int threads) {
  tj_emu_block* block = new tj_emu_block;
  pthread_barrier_init(&block->all, nullptr, static_cast<unsigned>(threads));
  for (int w = 0; w < threads / 32; ++w) pthread_barrier_init(&block->warps[w], nullptr, 32);
  pthread_t ids[1024];
  tj_emu_launch_args args[1024];
  for (int t = 0; t < threads; ++t) {
    args[t] = tj_emu_launch_args{kernel, ptrs, sizes, strides, blocks, threads, t, block};
    pthread_create(&ids[t], nullptr, tj_emu_thread, &args[t]);
  }
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], nullptr);
  pthread_barrier_destroy(&block->all);
  for (int w = 0; w < threads / 32; ++w) pthread_barrier_destroy(&block->warps[w]);
  delete block;
}
