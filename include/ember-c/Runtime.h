/*===- ember-c/Runtime.h - JIT compilation and calls --------------*- C -*-===*/
#ifndef EMBER_C_RUNTIME_H
#define EMBER_C_RUNTIME_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A JIT-compiled module (owns the LLVM ORC JIT and the code).
typedef struct EmberExecutable EmberExecutable;

/// Compiles `module` (already lowered to the LLVM dialect) for the host CPU,
/// with the host's CPU name and features so that LLVM vectorizes for it.
/// Returns null on failure and reports the message through `onError`.
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

#ifdef __cplusplus
}
#endif

#endif /* EMBER_C_RUNTIME_H */
