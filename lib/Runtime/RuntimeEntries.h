//===- RuntimeEntries.h - C prototypes of the runtime's entries -*- C++ -*-===//
//
// Generated from Runtime.def, so that the compiler checks each definition
// against the signature the lowering declares.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_LIB_RUNTIME_RUNTIMEENTRIES_H
#define EMBER_LIB_RUNTIME_RUNTIMEENTRIES_H

#include <cstddef>
#include <cstdint>

namespace ember::runtime::params {
using I64 = int64_t;
using Addr = intptr_t;
} // namespace ember::runtime::params

#define EMBER_UNPAREN(...) __VA_ARGS__
#define EMBER_RUNTIME_ENTRY(NAME, PARAMS)                                      \
  namespace ember::runtime::params {                                           \
  extern "C" void NAME(EMBER_UNPAREN PARAMS);                                  \
  }
#include "ember/Runtime/Runtime.def"
#undef EMBER_UNPAREN

extern "C" void *ember_malloc(size_t n);
extern "C" void *ember_calloc(size_t count, size_t size);
extern "C" void ember_free(void *p);
extern "C" float ember_truncsfbf2(float x);
extern "C" float ember_truncdfbf2(double x);
extern "C" float ember_truncdfhf2(double x);

namespace ember::runtime {
/// Runs task(ctx, a, b) on this thread; returns 0, or the size of an
/// allocation of compiled code that failed on this thread, where the task
/// was abandoned (MemoryPool.cpp).
size_t runGuarded(void (*task)(void *, int64_t, int64_t), void *ctx, int64_t a,
                  int64_t b);
/// Whether this thread runs a piece of a pool job (Parallel.cpp), during
/// which OpenBLAS has one thread.
bool inParallelPiece();
/// While one lives, this thread is a device's (Devices.cpp): its
/// `ember_parallel_for` jobs run on it alone, and its products choose
/// their kernels as a piece's do.
class DeviceWork {
public:
  DeviceWork();
  ~DeviceWork();

private:
  bool wasInPiece;
};
/// While one lives, OpenBLAS runs its products on one thread (the devices'
/// threads are the parallelism).
class OneBlasThreadScope {
public:
  OneBlasThreadScope();
  ~OneBlasThreadScope();

private:
  void *held;
};
/// An allocation of `bytes` failed: jumps to this thread's innermost guard
/// (runGuarded, emberRuntimeCallChecked); returns when there is none.
void allocationFailed(size_t bytes);

/// The address the embedder registered for `name`
/// (emberRuntimeRegisterSymbol: the hooks), or null (Jit.cpp).
void *registeredSymbol(const char *name);

/// Calls `bind(name, address)` for each EMBER_CUDA_ENTRY of Runtime.def
/// (Cuda.cpp), for the JIT's symbol table.
void bindCudaEntries(void (*bind)(const char *name, void *address, void *user),
                     void *user);

/// Calls `bind(name, address)` for each EMBER_DEVICE_MPI_ENTRY of Runtime.def
/// (Devices.cpp), for the JIT's symbol table.
void bindDeviceMpiEntries(void (*bind)(const char *name, void *address,
                                       void *user),
                          void *user);
} // namespace ember::runtime

#endif // EMBER_LIB_RUNTIME_RUNTIMEENTRIES_H
