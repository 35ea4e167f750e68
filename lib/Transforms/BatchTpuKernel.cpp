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
// Before that, as JAX's rule does (`prepareTpuKernelCall`): an unbatched
// operand aliased to an output is broadcast along the batch, batched
// scalar-prefetch operands of a batch of one are squeezed, and those of a
// larger batch make the call a counted loop over the examples calling the
// unbatched kernel (JAX's `_batch_with_explicit_loop`). Batched operands
// left in HBM for the kernel's DMAs are recorded as the kernel's error:
// only lowering for TPU reports them.
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

/// A recorded kernel's module, parsed in a context of its own (`owner`)
/// with `ctx`'s dialects: a pass may not load dialects into its own
/// context (multi-threaded), which parsing text naming an unloaded one
/// would (found by fuzzing).
static OwningOpRef<ModuleOp>
parseKernelModule(MLIRContext *ctx, StringRef text,
                  std::unique_ptr<MLIRContext> &owner) {
  owner = std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED);
  owner->appendDialectRegistry(ctx->getDialectRegistry());
  // (Ops are also built in it: every dialect loaded, as in the pass's.)
  owner->loadAllAvailableDialects();
  // (Diagnostics of the private parse stay quiet: failure is reported.)
  owner->getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  ParserConfig config(owner.get());
  return parseSourceString<ModuleOp>(text, config);
}

/// The kernel text batched (see the file comment), or failure with `why`.
static FailureOr<std::string> batchKernelText(MLIRContext *passCtx,
                                              StringRef text,
                                              ArrayRef<bool> operandBatched,
                                              ArrayRef<int64_t> aliases,
                                              int64_t n, std::string &why) {
  std::unique_ptr<MLIRContext> owner;
  OwningOpRef<ModuleOp> m = parseKernelModule(passCtx, text, owner);
  if (!m) {
    why = "its recorded kernel does not parse";
    return failure();
  }
  MLIRContext *ctx = owner.get();
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
  // (prepareTpuKernelCall made every aliased operand batched and every
  // scalar-prefetch operand unbatched.)
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

/// The number of scalar-prefetch operands of the kernel recorded in `text`.
static std::optional<int64_t> prefetchCount(MLIRContext *ctx, StringRef text) {
  std::unique_ptr<MLIRContext> owner;
  OwningOpRef<ModuleOp> m = parseKernelModule(ctx, text, owner);
  if (!m)
    return std::nullopt;
  for (auto f : m->getOps<func::FuncOp>())
    if (auto a = f->getAttrOfType<IntegerAttr>("scalar_prefetch"))
      return a.getInt();
  return std::nullopt;
}

/// The call of `callee` once per example in a counted loop, each result
/// written into row i of a [n, ...] buffer (JAX's explicit loop).
static SmallVector<Value> loopOverExamples(OpBuilder &b, func::CallOp call,
                                           func::FuncOp callee,
                                           ArrayRef<Value> operands,
                                           ArrayRef<bool> isBatched,
                                           int64_t n) {
  Location loc = call.getLoc();
  SmallVector<Value> init{scalarI64(b, loc, 0)};
  for (Type t : call.getResultTypes())
    init.push_back(ConstantOp::create(b, loc, splatOf(batchedType(t, n), 0)));
  SmallVector<Type> types(ValueRange(init).getTypes());
  auto loop = WhileOp::create(b, loc, types, init);
  loop.setTripCountAttr(b.getI64IntegerAttr(n));
  SmallVector<Location> locs(types.size(), loc);
  OpBuilder::InsertionGuard guard(b);
  Block *cond = b.createBlock(&loop.getCond(), {}, types, locs);
  Value more = CompareOp::create(b, loc, ComparisonDirection::LT,
                                 cond->getArgument(0), scalarI64(b, loc, n));
  YieldOp::create(b, loc, ValueRange{more});
  Block *body = b.createBlock(&loop.getBody(), {}, types, locs);
  Value i = body->getArgument(0);
  SmallVector<Value> example;
  for (auto [v, batched] : llvm::zip(operands, isBatched)) {
    if (!batched) {
      example.push_back(v);
      continue;
    }
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<Value> starts{i};
    for (int64_t d = 1; d < t.getRank(); ++d)
      starts.push_back(scalarI64(b, loc, 0));
    SmallVector<int64_t> sizes(t.getShape());
    sizes[0] = 1;
    Value row = DynamicSliceOp::create(b, loc, v, starts,
                                       b.getDenseI64ArrayAttr(sizes));
    example.push_back(ReshapeOp::create(
        b, loc,
        RankedTensorType::get(t.getShape().drop_front(), t.getElementType()),
        row));
  }
  auto c = func::CallOp::create(b, loc, callee, example);
  SmallVector<Value> next{
      AddOp::create(b, loc, i, scalarI64(b, loc, 1)).getResult()};
  for (auto [r, buf] :
       llvm::zip(c.getResults(), body->getArguments().drop_front())) {
    auto t = cast<RankedTensorType>(r.getType());
    SmallVector<Value> starts{i};
    for (int64_t d = 0; d < t.getRank(); ++d)
      starts.push_back(scalarI64(b, loc, 0));
    Value row = ReshapeOp::create(b, loc, batchedType(t, 1), r);
    next.push_back(DynamicUpdateSliceOp::create(b, loc, buf, row, starts));
  }
  YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults().drop_front());
}

bool mlir::ember::prepareTpuKernelCall(OpBuilder &b, func::CallOp call,
                                       func::FuncOp callee,
                                       SmallVectorImpl<Value> &operands,
                                       SmallVectorImpl<bool> &isBatched,
                                       int64_t n,
                                       SmallVectorImpl<Value> &results) {
  auto text = callee->getAttrOfType<StringAttr>(kKernelAttr);
  if (!text)
    return false;
  Location loc = call.getLoc();
  // An unbatched operand aliased to an output: broadcast along the batch,
  // so that the batched output can alias it.
  if (auto aliases = callee->getAttrOfType<DenseI64ArrayAttr>(kAliasesAttr))
    for (size_t k = 0; k + 1 < aliases.size(); k += 2) {
      int64_t i = aliases[k];
      if (i < 0 || i >= (int64_t)operands.size() || isBatched[i])
        continue;
      auto t = cast<RankedTensorType>(operands[i].getType());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < t.getRank(); ++d)
        dims.push_back(d + 1);
      operands[i] = BroadcastInDimOp::create(
          b, loc, batchedType(t, n), operands[i], b.getDenseI64ArrayAttr(dims));
      isBatched[i] = true;
    }
  std::optional<int64_t> npf =
      prefetchCount(call.getContext(), text.getValue());
  if (!npf || *npf > (int64_t)operands.size())
    return false;
  bool prefetchBatched = false;
  for (int64_t i = 0; i < *npf; ++i)
    prefetchBatched |= isBatched[i];
  if (!prefetchBatched)
    return false;
  if (n == 1) {
    // A batch of one: the prefetch operands lose it and stay unbatched.
    for (int64_t i = 0; i < *npf; ++i) {
      if (!isBatched[i])
        continue;
      auto t = cast<RankedTensorType>(operands[i].getType());
      operands[i] = ReshapeOp::create(
          b, loc,
          RankedTensorType::get(t.getShape().drop_front(), t.getElementType()),
          operands[i]);
      isBatched[i] = false;
    }
    return false;
  }
  results.append(loopOverExamples(b, call, callee, operands, isBatched, n));
  return true;
}
