/*===- ember-c/Runtime.h - JIT compilation and calls --------------*- C -*-===*/
#ifndef EMBER_C_RUNTIME_H
#define EMBER_C_RUNTIME_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A JIT-compiled module (owns the LLVM ORC JIT and the code).
typedef struct EmberExecutable EmberExecutable;

/// Compiles `module` (already lowered to the LLVM dialect) for the host CPU,
/// with the host's CPU name and features so that LLVM vectorizes for it. A
/// large program's glue code (functions without loops) and its loops compile
/// on two threads (docs/design.md, "Compile time"). Products and sums are
/// contracted into fused multiply-adds (as XLA's CPU backend does) unless the
/// module carries `ember.fp_contract = false` (removed here). Returns null on
/// failure and reports the message through `onError`.
MLIR_CAPI_EXPORTED EmberExecutable *
emberExecutableCreate(MlirModule module, int optLevel,
                      void (*onError)(MlirStringRef message, void *userData),
                      void *userData);

/// The packed wrapper `void f(void **args)` of the function `name`, or null;
/// args[i] points at the i-th argument. For a function compiled with
/// `llvm.emit_c_interface`, pass "_mlir_ciface_<name>": its arguments are
/// pointers to memref descriptors.
MLIR_CAPI_EXPORTED void *emberExecutableLookupPacked(EmberExecutable *exe,
                                                     MlirStringRef name);

MLIR_CAPI_EXPORTED void emberExecutableDestroy(EmberExecutable *exe);

/// Calls the packed entry point `fn(args)` (from emberExecutableLookupPacked)
/// in the floating-point mode of compiled code (below) and returns 0; returns 1
/// when compiled code could not allocate memory, with the size it asked for in
/// `*bytes`: the call is abandoned where the allocation failed (its temporaries
/// are not freed) instead of writing through a null pointer.
MLIR_CAPI_EXPORTED int emberRuntimeCallChecked(void (*fn)(void **), void **args,
                                               size_t *bytes);

/// The floating-point mode compiled code runs in: subnormal floats flushed
/// to zero on input and output, as XLA's CPU code does (x86; elsewhere these
/// do nothing). emberRuntimeCallChecked enters it for the call;
/// emberRuntimeEnterFloatMode enters it and emberRuntimeLeaveFloatMode leaves
/// it (a host callback's Python runs outside it), each returning the mode
/// before, which emberRuntimeRestoreFloatMode puts back.
MLIR_CAPI_EXPORTED unsigned emberRuntimeEnterFloatMode(void);
MLIR_CAPI_EXPORTED unsigned emberRuntimeLeaveFloatMode(void);
MLIR_CAPI_EXPORTED void emberRuntimeRestoreFloatMode(unsigned mode);

/// As emberExecutableCreate, keeping the object code so that
/// emberExecutableWriteObject can store it (the persistent compilation
/// cache).
MLIR_CAPI_EXPORTED EmberExecutable *emberExecutableCreateKeepingObject(
    MlirModule module, int optLevel,
    void (*onError)(MlirStringRef message, void *userData), void *userData);

/// Writes the object code of `exe` (made by emberExecutableCreateKeepingObject)
/// to `path`: one object file, or several in a container that
/// emberExecutableLoadObject reads. Returns false on failure.
MLIR_CAPI_EXPORTED bool emberExecutableWriteObject(EmberExecutable *exe,
                                                   MlirStringRef path);

/// Loads object code written by emberExecutableWriteObject (for this CPU),
/// with the runtime's entry points; null on failure (reported as above).
MLIR_CAPI_EXPORTED EmberExecutable *emberExecutableLoadObject(
    const void *data, size_t size,
    void (*onError)(MlirStringRef message, void *userData), void *userData);

/// Runs `fn(args[i])` for the `n` in-process devices at once, each on a thread
/// of its own as device i (a program partitioned over the devices, whose
/// collectives are the ember_devices_MPI_* functions among these threads).
/// Returns 0, or 1 where a device's call could not allocate memory (the
/// largest size asked for in `*failed`; the other devices leave their
/// collectives). One such call runs at a time.
MLIR_CAPI_EXPORTED int emberRuntimeRunOnDevices(void (*fn)(void **),
                                                void ***args, int n,
                                                size_t *failed);

/// Threads of `ember_parallel_for` (the rows of large loop nests; default
/// EMBER_NUM_THREADS, else the host's cores), the caller included.
MLIR_CAPI_EXPORTED void emberRuntimeSetNumThreads(int n);
MLIR_CAPI_EXPORTED int emberRuntimeNumThreads(void);

/// Makes OpenBLAS run its parallel work on the threads above: `setCallback`
/// is OpenBLAS's `openblas_set_threads_callback_function` (0.3.27 and later),
/// which must be called before any other OpenBLAS function.
MLIR_CAPI_EXPORTED void emberRuntimeUseForOpenblas(void *setCallback);

/// OpenBLAS's `openblas_get_num_threads` and `openblas_set_num_threads`:
/// while `ember_parallel_for` jobs run (a Pallas grid's points on the
/// threads), OpenBLAS's products run on one thread each.
MLIR_CAPI_EXPORTED void
emberRuntimeSetOpenblasThreadControl(void *getNumThreads, void *setNumThreads);

/// The host CPU's name and features as the JIT targets them: part of the
/// persistent cache's key.
MLIR_CAPI_EXPORTED MlirStringRef emberRuntimeHostCpu(void);

/// Makes `address` the definition of the external symbol `name` in every
/// module compiled from now on. Embedders use it for runtime entry points of
/// compiled code, e.g. `ember_host_callback` (the `ember.host_callback` op):
///
///   void ember_host_callback(<memref<?xi64> signature>,
///                            <memref<?xindex> operand addresses>,
///                            <memref<?xindex> result addresses>)
///
/// where each memref is passed as its five descriptor fields (allocated
/// pointer, aligned pointer, offset, size, stride). The signature record is
/// [callback id, #operands, #results, then per value: type code, rank,
/// dims...]; EMBER_TYPE_CODE in ember/Runtime/Runtime.def lists the type codes.
MLIR_CAPI_EXPORTED void emberRuntimeRegisterSymbol(MlirStringRef name,
                                                   void *address);

/// Large f32/f64 contractions call `ember_gemm_f32` / `ember_gemm_f64`
/// (batched row-major GEMM), which every compiled module resolves to the
/// runtime's own functions. They use these CBLAS `cblas_sgemm` /
/// `cblas_dgemm` functions (32-bit integer interface, e.g. scipy-openblas32's
/// `scipy_cblas_sgemm`) when given, and a plain loop nest otherwise.
MLIR_CAPI_EXPORTED void emberRuntimeSetCblasGemm(void *sgemm, void *dgemm);

/// `ember.cholesky`, `ember.eigh`, `ember.lu`, `ember.qr`, `ember.svd` and
/// `ember.triangular_solve` call `ember_cholesky_*`, `ember_eigh_*`,
/// `ember_lu_*`, `ember_qr_*`, `ember_svd_*` / `ember_svd_values_*` and
/// `ember_triangular_solve_*` (`f32`, `f64`, `c64`, `c128`), which use the
/// LAPACKE `LAPACKE_?potrf`, `LAPACKE_?getrf`, `LAPACKE_?syevd` /
/// `LAPACKE_?heevd`, `LAPACKE_?geqrf`, `LAPACKE_?orgqr` / `LAPACKE_?ungqr`
/// and `LAPACKE_?gesdd` and CBLAS `cblas_?trsm` functions (32-bit integers,
/// e.g. scipy-openblas32's `scipy_LAPACKE_spotrf`) registered here under
/// their LAPACK names (`spotrf`, `zgetrf`, `cheevd`, `dorgqr`, `cungqr`,
/// `sgesdd`, `dtrsm`, ...; null unregisters), and plain loops otherwise
/// (complex eigh and SVD then give NaNs). Returns false for a name it does
/// not know.
MLIR_CAPI_EXPORTED bool emberRuntimeSetLapackFunction(MlirStringRef name,
                                                      void *fn);

/// `ember.fft` calls `ember_fft_*` (by the operand's element type), which
/// calls the function registered here when there is one, and otherwise
/// computes each one-dimensional DFT directly (O(n^2), in double precision).
/// Its arguments: kind (0 FFT, 1 IFFT scaled by 1 / prod(lengths), 2 RFFT,
/// 3 IRFFT, as StableHLO's `fft`), double precision (0: f32/complex<f32>,
/// 1: f64/complex<f64>), batch, ndims (1 to 3), the lengths, and the
/// contiguous row-major operand and result (batch x the trailing shape;
/// complex numbers as pairs). Null unregisters. (Python registers SciPy's
/// pocketfft.)
typedef void (*EmberFftFunction)(int64_t kind, int64_t doublePrecision,
                                 int64_t batch, int64_t ndims,
                                 const int64_t *lengths, const void *in,
                                 void *out);
MLIR_CAPI_EXPORTED void emberRuntimeSetFftFunction(EmberFftFunction fn);

/// The runtime's one memory pool, which also serves compiled code's
/// malloc/calloc/free: a 64-byte aligned block of `bytes` (null when out of
/// memory), kept for reuse when freed. `emberRuntimeFree` takes blocks of
/// either; `emberRuntimeClearPool` returns the kept blocks to the system.
MLIR_CAPI_EXPORTED void *emberRuntimeAlloc(size_t bytes);
MLIR_CAPI_EXPORTED void emberRuntimeFree(void *block);
MLIR_CAPI_EXPORTED size_t emberRuntimePooledBytes(void);
MLIR_CAPI_EXPORTED void emberRuntimeClearPool(void);

/// The CUDA runtime (lib/Runtime/Cuda.cpp): the driver loaded with dlopen
/// ("libcuda.so.1", or EMBER_CUDA_DRIVER's path) on first use, GPU 0's
/// primary context and one stream. emberCudaDeviceCount is 0 without a
/// usable driver and GPU (emberCudaUnavailableReason says why).
MLIR_CAPI_EXPORTED int emberCudaDeviceCount(void);
MLIR_CAPI_EXPORTED MlirStringRef emberCudaUnavailableReason(void);
/// The first CUDA error since the last call ("CUDA_ERROR_<NAME> (<code>) in
/// <driver call>"), copied NUL-terminated into `buffer`; returns its length
/// (0: no error). Until it is taken every CUDA call of compiled code does
/// nothing.
MLIR_CAPI_EXPORTED size_t emberCudaTakeError(char *buffer, size_t size);
/// Device memory from the caching allocator (null on error), and back to it.
MLIR_CAPI_EXPORTED void *emberCudaAlloc(size_t bytes);
MLIR_CAPI_EXPORTED void emberCudaFree(void *block);
/// A copy in any direction (unified addressing), waited for.
MLIR_CAPI_EXPORTED void emberCudaCopy(void *dst, const void *src, size_t bytes);
MLIR_CAPI_EXPORTED void emberCudaSynchronize(void);
/// Returns the allocator's cached blocks to the driver.
MLIR_CAPI_EXPORTED void emberCudaReleaseCache(void);
/// How many blocks the allocator obtained from the driver, and the bytes it
/// holds cached.
MLIR_CAPI_EXPORTED void emberCudaAllocatorStats(size_t *allocations,
                                                size_t *cachedBytes);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_C_RUNTIME_H */
