//===- EmberRefs.h - threading refs' values through a body ------*- C++ -*-===//
//
// A function's `!ember.ref` arguments are read and written by the ref ops in
// its body and in the regions of the `ember.while`/`ember.case` ops in it
// (ref_c2). `RefThreading` replaces those ops by the values they read and
// write, so that only a read of each ref's value on entry and, for refs
// written, a write of its last value remain: `ember-to-linalg` lowers that
// pair to the ref's buffer, and the transformation passes differentiate and
// batch the threaded values (lib/IR/EmberRefs.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_IR_EMBERREFS_H
#define EMBER_IR_EMBERREFS_H

#include "ember/IR/EmberDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ember {

/// Threads the refs' values through one function body: `thread` replaces the
/// ref ops of a block (and of the `ember.while` and `ember.case` ops in it)
/// by the values they read and write, `current` mapping each ref to its
/// value at the op being visited.
class RefThreading {
public:
  /// The reads of the refs' values on entry are put at the start of `entry`,
  /// or before `anchor` (an op of `entry` that threading does not erase).
  explicit RefThreading(Block &entry, Operation *anchor = nullptr)
      : entry(entry), anchor(anchor) {}

  /// The ref's value on entry (one `ref_get` at the function's entry).
  Value entryValue(Value ref);

  LogicalResult thread(Block &block, llvm::DenseMap<Value, Value> &current);

  /// The refs some op wrote.
  llvm::DenseSet<Value> written;
  /// Where each written ref was last written (in program order).
  llvm::DenseMap<Value, LocationAttr> lastWrite;

private:
  Value valueOf(llvm::DenseMap<Value, Value> &current, Value ref);
  /// The refs the ref ops in `op`'s regions write, in a fixed order.
  static SmallVector<Value> writtenInside(Operation *op);
  LogicalResult threadRegions(Operation *op,
                              llvm::DenseMap<Value, Value> &current);

  Block &entry;
  Operation *anchor;
  llvm::DenseMap<Value, Value> onEntry;
};

/// Whether `op` is one of the ref ops (get, set, swap, addupdate).
bool isRefOp(Operation *op);

/// For the transformation passes, on the body of the function they build:
/// threads the refs used by the ops from `first` on (the transformed
/// function's inlined body) so that, of the ref ops, only one `ref_get` of
/// each ref before `first` and, for each ref written, one `ref_set` of its
/// last value at the end of `body` remain. `live` (the transformed
/// function's results) is updated where a value was a read.
LogicalResult threadRefsForTransform(Block &body, Operation *first,
                                     SmallVectorImpl<Value> &live);

} // namespace mlir::ember

#endif // EMBER_IR_EMBERREFS_H
