//===- Runtime.h - the runtime's shared declarations ------------*- C++ -*-===//
//
// What the lowering and the runtime share, generated from Runtime.def:
// entry-point signatures, callback type codes, user-error kinds.
// Header-only, so the lowering does not link the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_RUNTIME_RUNTIME_H
#define EMBER_RUNTIME_RUNTIME_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::ember::runtime {

/// How compiled code passes one parameter of a runtime function.
enum class Param { I64, Addr, MemRefI64, MemRefIndex };

struct EntryPoint {
  llvm::StringRef name;
  llvm::ArrayRef<Param> params;
  bool hook; ///< defined by the embedder, not by lib/Runtime
};

/// Every function compiled code may call (entries and hooks).
inline llvm::ArrayRef<EntryPoint> entryPoints() {
  constexpr Param I64 = Param::I64, Addr = Param::Addr,
                  MemRefI64 = Param::MemRefI64,
                  MemRefIndex = Param::MemRefIndex;
#define EMBER_RUNTIME_ENTRY(NAME, PARAMS)                                      \
  static const Param NAME##_params[] = {EMBER_UNPAREN PARAMS};
#define EMBER_RUNTIME_HOOK(NAME, PARAMS)                                       \
  static const Param NAME##_params[] = {EMBER_UNPAREN PARAMS};
#define EMBER_UNPAREN(...) __VA_ARGS__
#include "ember/Runtime/Runtime.def"
  static const EntryPoint all[] = {
#define EMBER_RUNTIME_ENTRY(NAME, PARAMS) {#NAME, NAME##_params, false},
#define EMBER_RUNTIME_HOOK(NAME, PARAMS) {#NAME, NAME##_params, true},
#include "ember/Runtime/Runtime.def"
  };
#undef EMBER_UNPAREN
  return all;
}

/// The entry point called `name`, or null.
inline const EntryPoint *lookupEntryPoint(llvm::StringRef name) {
  for (const EntryPoint &e : entryPoints())
    if (e.name == name)
      return &e;
  return nullptr;
}

/// The code of a NumPy dtype name in a callback's signature record, or -1.
inline int64_t typeCode(llvm::StringRef dtypeName) {
#define EMBER_TYPE_CODE(CODE, NAME)                                            \
  if (dtypeName == NAME)                                                       \
    return CODE;
#include "ember/Runtime/Runtime.def"
  return -1;
}

/// Errors of passes that are the user's (see Runtime.def).
enum class ErrorKind {
#define EMBER_ERROR_KIND(ENUM, ID, EXC) ENUM,
#include "ember/Runtime/Runtime.def"
};

inline llvm::StringRef errorKindId(ErrorKind k) {
  switch (k) {
#define EMBER_ERROR_KIND(ENUM, ID, EXC)                                        \
  case ErrorKind::ENUM:                                                        \
    return ID;
#include "ember/Runtime/Runtime.def"
  }
  return "";
}

} // namespace mlir::ember::runtime

#endif // EMBER_RUNTIME_RUNTIME_H
