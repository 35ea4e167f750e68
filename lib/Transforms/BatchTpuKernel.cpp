//===- BatchTpuKernel.cpp - vmap of a recorded Pallas TPU kernel ----------===//
//
// A `pallas_call` records, on the private function holding its interpreter,
// the kernel in the `ember_tpu` form before conversion
// (python/ember/_src/pallas/tpu_kernel.py; `ember_tpu.kernel_module`).
// ember-batch batches the interpreter like any callee; this file batches
// the recorded kernel the way JAX's pallas_call batching rule does, so that
// the TPU target still emits the kernel for a vmapped program:
//   - the batch becomes a new leading grid dimension, "parallel";
//   - a batched operand's window, and every output's, gains a squeezed
//     leading dimension (window bound 1) whose block index is that grid
//     index; unbatched operands keep their windows, their index maps
//     taking (and ignoring) the new grid index;
//   - the kernel body is unchanged: it sees the same blocks, and its
//     program ids are its grid arguments after the new one.
// What JAX batches with an explicit loop instead (batched scalar-prefetch
// operands) or by broadcasting (an unbatched operand aliased to an output),
// and batched operands left in HBM for the kernel's DMAs, are recorded as
// the kernel's error: only lowering for TPU reports them.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"

#include "ember/IR/EmberDialect.h"
#include "ember/IR/EmberTPUDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mlir::ember;

static constexpr StringLiteral kKernelAttr("ember_tpu.kernel_module");
static constexpr StringLiteral kNameAttr("ember_tpu.kernel_name");
static constexpr StringLiteral kErrorAttr("ember_tpu.kernel_error");
static constexpr StringLiteral kAliasesAttr("ember_tpu.kernel_aliases");
static constexpr StringLiteral kGridArgs("ember_tpu.grid_args");

/// Inserts a leading 0-d i32 grid argument into `f` and counts it.
static Value addGridArg(func::FuncOp f, int64_t gridArgs) {
  MLIRContext *ctx = f.getContext();
  auto i32 = RankedTensorType::get({}, IntegerType::get(ctx, 32));
  if (failed(f.insertArgument(0, i32, DictionaryAttr::get(ctx), f.getLoc())))
    return {};
  f->setAttr(kGridArgs,
             IntegerAttr::get(IntegerType::get(ctx, 64), gridArgs + 1));
  return f.getArgument(0);
}

/// The kernel text batched (see the file comment), or failure with `why`.
static FailureOr<std::string> batchKernelText(MLIRContext *ctx, StringRef text,
                                              ArrayRef<bool> operandBatched,
                                              ArrayRef<int64_t> aliases,
                                              int64_t n, std::string &why) {
  ParserConfig config(ctx);
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, config);
  if (!m) {
    why = "its recorded kernel does not parse";
    return failure();
  }
  func::FuncOp kernel;
  for (auto f : m->getOps<func::FuncOp>())
    if (f->hasAttr("scalar_prefetch"))
      kernel = f;
  if (!kernel) {
    why = "its recorded kernel has no kernel function";
    return failure();
  }
  auto intAttr = [&](StringRef name) {
    auto a = kernel->getAttrOfType<IntegerAttr>(name);
    return a ? a.getInt() : 0;
  };
  int64_t grid = intAttr(kGridArgs), npf = intAttr("scalar_prefetch"),
          nscratch = intAttr("scratch_operands");
  int64_t nblocks = (int64_t)kernel.getNumArguments() - grid - npf - nscratch;
  int64_t nin = (int64_t)operandBatched.size() - npf;
  if (nin < 0 || nblocks < nin) {
    why = "its operands do not match its recorded kernel";
    return failure();
  }
  for (int64_t i = 0; i < npf; ++i)
    if (operandBatched[i]) {
      why = "scalar-prefetch operand " + std::to_string(i) + " is batched";
      return failure();
    }
  for (size_t k = 0; k + 1 < aliases.size(); k += 2)
    if (aliases[k] < 0 || aliases[k] >= (int64_t)operandBatched.size() ||
        !operandBatched[aliases[k]]) {
      why = "operand " + std::to_string(aliases[k]) +
            ", aliased to an output, is not batched";
      return failure();
    }

  SymbolTable symbols(*m);
  OpBuilder b(ctx);
  SmallVector<Type> prefetchTypes;
  for (int64_t i = 0; i < npf; ++i)
    prefetchTypes.push_back(kernel.getArgument(grid + i).getType());
  auto windows = kernel->getAttrOfType<ArrayAttr>("window_params");
  if (windows && (int64_t)windows.size() != nblocks) {
    why = "its recorded kernel does not have a window for each block";
    return failure();
  }
  auto spaces = kernel->getAttrOfType<ArrayAttr>("ember_tpu.arg_spaces");
  SmallVector<Attribute> newWindows;
  // Squeezed block dimensions per argument after the grid (the batch is
  // squeezed: the kernel sees the same blocks).
  SmallVector<Attribute> squeezed(kernel.getNumArguments() - grid,
                                  b.getDenseI64ArrayAttr({}));
  if (auto s = kernel->getAttrOfType<ArrayAttr>("ember_tpu.squeezed_dims"))
    if (s.size() == squeezed.size())
      squeezed.assign(s.begin(), s.end());
  for (int64_t k = 0; k < nblocks; ++k) {
    bool batched = k < nin ? operandBatched[npf + k] : true;
    auto w = windows ? dyn_cast<DictionaryAttr>(windows[k]) : DictionaryAttr();
    // A kernel without a grid has no windows: its blocks in HBM are known
    // by their memory space.
    if (!w && spaces && npf + k < (int64_t)spaces.size())
      if (auto space = dyn_cast<ember_tpu::MemorySpaceAttr>(spaces[npf + k]))
        if (space.getValue() == ember_tpu::MemorySpace::any ||
            space.getValue() == ember_tpu::MemorySpace::hbm)
          w = DictionaryAttr::get(ctx);
    if (w && w.empty()) { // in HBM: the kernel's DMAs reach the whole array
      if (batched) {
        why = "operand " + std::to_string(npf + k) +
              " stays in HBM (memory space ANY) and is batched";
        return failure();
      }
      newWindows.push_back(w);
      continue;
    }
    NamedAttrList attrs(w ? w : DictionaryAttr::get(ctx));
    SmallVector<int64_t> bounds;
    if (auto wb =
            dyn_cast_or_null<DenseI64ArrayAttr>(attrs.get("window_bounds")))
      bounds.assign(wb.asArrayRef().begin(), wb.asArrayRef().end());
    else // no grid: the block is the whole array
      bounds.assign(
          cast<ShapedType>(kernel.getArgument(grid + npf + k).getType())
              .getShape()
              .begin(),
          cast<ShapedType>(kernel.getArgument(grid + npf + k).getType())
              .getShape()
              .end());
    func::FuncOp t;
    if (auto name =
            dyn_cast_or_null<FlatSymbolRefAttr>(attrs.get("transform_indices")))
      t = symbols.lookup<func::FuncOp>(name.getValue());
    if (!t) {
      // The block index map (grid indices and prefetch in) at the origin.
      SmallVector<Type> ins(grid,
                            RankedTensorType::get({}, b.getIntegerType(32)));
      ins.append(prefetchTypes);
      auto i32 = RankedTensorType::get({}, b.getIntegerType(32));
      SmallVector<Type> outs(bounds.size(), i32);
      b.setInsertionPointToEnd(m->getBody());
      t = func::FuncOp::create(b, kernel.getLoc(),
                               "transform_" + std::to_string(k),
                               b.getFunctionType(ins, outs));
      symbols.insert(t);
      t->setAttr(kGridArgs, b.getI64IntegerAttr(grid));
      // (Index maps take the scalar-prefetch operands, in SMEM.)
      SmallVector<Attribute> prefetchSpaces(
          npf,
          ember_tpu::MemorySpaceAttr::get(ctx, ember_tpu::MemorySpace::smem));
      t->setAttr("ember_tpu.arg_spaces", b.getArrayAttr(prefetchSpaces));
      Block *body = t.addEntryBlock();
      b.setInsertionPointToEnd(body);
      Value zero = ConstantOp::create(
          b, t.getLoc(), DenseElementsAttr::get(i32, b.getI32IntegerAttr(0)));
      func::ReturnOp::create(b, t.getLoc(),
                             SmallVector<Value>(bounds.size(), zero));
      attrs.set("transform_indices", FlatSymbolRefAttr::get(t));
      if (!batched &&
          llvm::equal(bounds, cast<ShapedType>(
                                  kernel.getArgument(grid + npf + k).getType())
                                  .getShape()))
        attrs.set("pipeline_mode",
                  ember_tpu::PipelineModeAttr::get(
                      ctx, ember_tpu::PipelineMode::synchronous));
    }
    Value index = addGridArg(t, grid);
    if (!index) {
      why = "its index map cannot take the batch index";
      return failure();
    }
    if (batched) {
      auto ret = cast<func::ReturnOp>(t.front().getTerminator());
      SmallVector<Value> results{index};
      results.append(ret.getOperands().begin(), ret.getOperands().end());
      b.setInsertionPoint(ret);
      func::ReturnOp::create(b, ret.getLoc(), results);
      ret.erase();
      SmallVector<Type> outs(ValueRange(results).getTypes());
      t.setFunctionType(b.getFunctionType(t.getArgumentTypes(), outs));
      bounds.insert(bounds.begin(), 1);
      attrs.erase("pipeline_mode");
      SmallVector<int64_t> dims{0};
      if (auto old = dyn_cast<DenseI64ArrayAttr>(squeezed[npf + k]))
        for (int64_t d : old.asArrayRef())
          dims.push_back(d + 1);
      squeezed[npf + k] = b.getDenseI64ArrayAttr(dims);
    }
    attrs.set("window_bounds", b.getDenseI64ArrayAttr(bounds));
    newWindows.push_back(attrs.getDictionary(ctx));
  }

  if (!addGridArg(kernel, grid)) {
    why = "its kernel cannot take the batch index";
    return failure();
  }
  SmallVector<int64_t> iterations{n};
  if (auto it = kernel->getAttrOfType<DenseI64ArrayAttr>("iteration_bounds"))
    iterations.append(it.asArrayRef().begin(), it.asArrayRef().end());
  kernel->setAttr("iteration_bounds", b.getDenseI64ArrayAttr(iterations));
  SmallVector<Attribute> semantics{ember_tpu::DimensionSemanticsAttr::get(
      ctx, ember_tpu::DimensionSemantics::parallel)};
  if (auto s = kernel->getAttrOfType<ArrayAttr>("dimension_semantics"))
    semantics.append(s.begin(), s.end());
  kernel->setAttr("dimension_semantics", b.getArrayAttr(semantics));
  kernel->setAttr("window_params", b.getArrayAttr(newWindows));
  kernel->setAttr("ember_tpu.squeezed_dims", b.getArrayAttr(squeezed));

  std::string out;
  llvm::raw_string_ostream os(out);
  m->print(os, OpPrintingFlags().enableDebugInfo());
  return out;
}

void mlir::ember::carryTpuKernel(func::FuncOp callee, func::FuncOp batchedFn,
                                 ArrayRef<bool> operandBatched, int64_t n) {
  if (auto error = callee->getAttr(kErrorAttr)) {
    batchedFn->setAttr(kErrorAttr, error);
    return;
  }
  auto text = callee->getAttrOfType<StringAttr>(kKernelAttr);
  auto name = callee->getAttrOfType<StringAttr>(kNameAttr);
  if (!text || !name)
    return;
  auto aliases = callee->getAttrOfType<DenseI64ArrayAttr>(kAliasesAttr);
  std::string why;
  MLIRContext *ctx = callee.getContext();
  FailureOr<std::string> batched = batchKernelText(
      ctx, text.getValue(), operandBatched,
      aliases ? aliases.asArrayRef() : ArrayRef<int64_t>(), n, why);
  if (failed(batched)) {
    batchedFn->setAttr(kErrorAttr,
                       StringAttr::get(ctx, name.getValue() +
                                                ": NotImplementedError: under "
                                                "vmap, " +
                                                why));
    return;
  }
  batchedFn->setAttr(kKernelAttr, StringAttr::get(ctx, *batched));
  batchedFn->setAttr(kNameAttr, name);
  if (aliases)
    batchedFn->setAttr(kAliasesAttr, aliases);
}
