//===- EmberOutlineRepeatedKernels.cpp - share repeated loop nests --------===//
//
// Identical linalg ops on buffers (equal up to their operands) become calls
// of one private function, so that LLVM compiles each distinct loop nest
// once. The key of an op is the text of the function it would be outlined
// into, printed without locations: two ops share a function exactly when
// those functions would be the same.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBEROUTLINEREPEATEDKERNELSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
/// An op and the function it would be outlined into, with the values passed
/// to that function.
struct Candidate {
  linalg::LinalgOp op;
  func::FuncOp fn;
  SmallVector<Value> args;
};

/// Builds (detached) the function `op` would be outlined into: the operands,
/// then the non-constant values its regions use from above, are arguments;
/// constants are cloned in.
Candidate outline(linalg::LinalgOp op) {
  SmallVector<Operation *> constants;
  Candidate c{op, nullptr, ember::outlinedOperands(op, constants)};
  OpBuilder b(op->getContext());
  SmallVector<Type> types;
  for (Value v : c.args)
    types.push_back(v.getType());
  Location loc = op->getLoc();
  c.fn =
      func::FuncOp::create(loc, "__ember_kernel", b.getFunctionType(types, {}));
  Block *body = c.fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(c.args, body->getArguments()))
    map.map(v, arg);
  for (Operation *k : constants)
    b.clone(*k, map);
  b.clone(*op, map);
  func::ReturnOp::create(b, loc);
  return c;
}

struct EmberOutlineRepeatedKernelsPass
    : public mlir::ember::impl::EmberOutlineRepeatedKernelsPassBase<
          EmberOutlineRepeatedKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      // Inside a loop, a call per iteration is not worth the saving.
      if (op.hasPureBufferSemantics() && op->getNumResults() == 0 &&
          !op->getParentOfType<LoopLikeOpInterface>() &&
          op->getParentOfType<func::FuncOp>())
        ops.push_back(op);
    });
    // Groups in program order (deterministic function names).
    llvm::StringMap<unsigned> groupOf;
    SmallVector<SmallVector<Candidate>> groups;
    for (linalg::LinalgOp op : ops) {
      Candidate c = outline(op);
      std::string key;
      llvm::raw_string_ostream os(key);
      c.fn->print(os, OpPrintingFlags().useLocalScope());
      auto [it, added] = groupOf.try_emplace(key, groups.size());
      if (added)
        groups.emplace_back();
      groups[it->second].push_back(std::move(c));
    }
    // Functions with many loop nests become glue code calling kernels: every
    // candidate of theirs is outlined, one that occurs once included.
    DenseMap<Operation *, int64_t> perFunction;
    for (linalg::LinalgOp op : ops)
      ++perFunction[op->getParentOfType<func::FuncOp>()];
    auto outlineAll = [&](const Candidate &c) {
      return outlineAllAbove > 0 &&
             perFunction.lookup(c.op->getParentOfType<func::FuncOp>()) >=
                 outlineAllAbove;
    };
    SymbolTable symbols(module);
    for (SmallVector<Candidate> &group : groups) {
      if (group.size() < 2 && !outlineAll(group.front())) {
        group.front().fn.erase();
        continue;
      }
      func::FuncOp fn = group.front().fn;
      fn.setPrivate();
      // Kept out of line through the LLVM dialect (convert-func-to-llvm
      // carries `passthrough` over; it drops a `no_inline` attribute).
      fn->setAttr("passthrough",
                  ArrayAttr::get(&getContext(),
                                 {StringAttr::get(&getContext(), "noinline")}));
      symbols.insert(fn); // renamed if the name is taken
      for (Candidate &c : group) {
        OpBuilder b(c.op);
        func::CallOp::create(b, c.op->getLoc(), fn, c.args);
        c.op->erase();
        if (c.fn != fn)
          c.fn.erase();
      }
    }
  }
};
} // namespace
