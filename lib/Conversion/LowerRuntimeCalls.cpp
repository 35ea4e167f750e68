//===- LowerRuntimeCalls.cpp - calls into the runtime ---------------------===//
//
// host_callback, the run-time stack ops and the linear algebra ops
// (cholesky, eigh, lu, qr, svd, triangular_solve) become calls of buffer
// helpers that call runtime entry points (include/ember/Runtime/Runtime.def).
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "ember/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::ember;

//===----------------------------------------------------------------------===//
// Buffer helpers (also used by LowerDot.cpp)
//===----------------------------------------------------------------------===//

/// Declares the external runtime function `name` once.
void mlir::ember::declareRuntimeFunction(ModuleOp module, StringRef name) {
  if (module.lookupSymbol(name))
    return;
  const runtime::EntryPoint *entry = runtime::lookupEntryPoint(name);
  if (!entry)
    llvm::report_fatal_error(llvm::Twine("ember: '") + name +
                             "' is not a runtime entry point (Runtime.def)");
  Builder tb(module.getContext());
  SmallVector<Type> params;
  for (runtime::Param p : entry->params) {
    switch (p) {
    case runtime::Param::I64:
      params.push_back(tb.getI64Type());
      break;
    case runtime::Param::Addr:
      params.push_back(tb.getIndexType());
      break;
    case runtime::Param::MemRefI64:
      params.push_back(
          MemRefType::get({ShapedType::kDynamic}, tb.getI64Type()));
      break;
    case runtime::Param::MemRefIndex:
      params.push_back(
          MemRefType::get({ShapedType::kDynamic}, tb.getIndexType()));
      break;
    }
  }
  FunctionType type = tb.getFunctionType(params, {});
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(mb, module.getLoc(), name, type);
  decl.setPrivate();
}

/// The address of the data of argument `a` (a tensor) of `helper`, laid
/// out row-major. The argument's buffer may be any strided view (its
/// `bufferization.buffer_layout` is fully dynamic), so that the caller
/// passes a slice without copying it; a view that is not contiguous
/// (checked at run time) is copied into a fresh row-major buffer first.
static Value contiguousAddress(OpBuilder &b, Location loc, func::FuncOp helper,
                               BlockArgument a, bool identityLayout) {
  auto tt = cast<RankedTensorType>(a.getType());
  if (!tt.hasStaticShape() || identityLayout) {
    // A dynamically shaped operand, or any with `identityLayout`, is passed
    // row-major (bufferization copies a strided view at the call).
    Value m = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(tt.getShape(), tt.getElementType()), a,
        /*readOnly=*/true);
    return memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m);
  }
  MLIRContext *ctx = b.getContext();
  int64_t dyn = ShapedType::kDynamic;
  auto layout =
      StridedLayoutAttr::get(ctx, dyn, SmallVector<int64_t>(tt.getRank(), dyn));
  helper.setArgAttr(a.getArgNumber(),
                    bufferization::BufferizationDialect::kBufferLayoutAttrName,
                    layout);
  auto viewType = MemRefType::get(tt.getShape(), tt.getElementType(), layout);
  Value view = bufferization::ToBufferOp::create(b, loc, viewType, a,
                                                 /*readOnly=*/true);
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, view);
  // Row-major strides, ignoring dimensions of one element.
  Value contiguous = arith::ConstantIntOp::create(b, loc, 1, 1);
  int64_t expected = 1;
  for (int64_t d = tt.getRank() - 1; d >= 0; --d) {
    int64_t n = tt.getDimSize(d);
    if (n != 1) {
      Value same = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, meta.getStrides()[d],
          arith::ConstantIndexOp::create(b, loc, expected));
      contiguous = arith::AndIOp::create(b, loc, contiguous, same);
    }
    expected *= n;
  }
  auto ifOp = scf::IfOp::create(
      b, loc, contiguous,
      [&](OpBuilder &tb, Location l) { scf::YieldOp::create(tb, l, view); },
      [&](OpBuilder &eb, Location l) {
        auto rowMajor = MemRefType::get(tt.getShape(), tt.getElementType());
        Value copy = memref::AllocOp::create(eb, l, rowMajor);
        memref::CopyOp::create(eb, l, view, copy);
        scf::YieldOp::create(
            eb, l, memref::CastOp::create(eb, l, viewType, copy).getResult());
      });
  Value data = ifOp.getResult(0);
  auto dataMeta = memref::ExtractStridedMetadataOp::create(b, loc, data);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, dataMeta.getBaseBuffer());
  Type elem = tt.getElementType();
  int64_t bits =
      isa<ComplexType>(elem)
          ? 2 * cast<ComplexType>(elem).getElementType().getIntOrFloatBitWidth()
          : elem.getIntOrFloatBitWidth();
  int64_t bytes = std::max<int64_t>(1, bits / 8);
  Value offset =
      arith::MulIOp::create(b, loc, dataMeta.getOffset(),
                            arith::ConstantIndexOp::create(b, loc, bytes));
  return arith::AddIOp::create(b, loc, base, offset);
}

/// Builds `func.func private @<prefix>_<k>(inTypes) -> resultTypes` that
/// hands raw buffers to a runtime function: its tensor arguments become
/// read-only buffers, its results freshly allocated buffers, and `emit` gets
/// their aligned addresses (index values) to build the runtime call. Being
/// arguments of the helper keeps the operand buffers alive across the call
/// (extracting an address is not a use the deallocation pipeline respects).
/// Returns the helper's name.
std::string mlir::ember::buildBufferHelper(
    ModuleOp module, Location loc, StringRef prefix, TypeRange inTypes,
    TypeRange resultTypes,
    function_ref<void(OpBuilder &, ArrayRef<Value>, ArrayRef<Value>)> emit,
    bool identityLayouts) {
  std::string name;
  for (int k = 0;; ++k) {
    name = (prefix + "_" + Twine(k)).str();
    if (!module.lookupSymbol(name))
      break;
  }
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto helper = func::FuncOp::create(mb, loc, name,
                                     mb.getFunctionType(inTypes, resultTypes));
  helper.setPrivate();
  Block *body = helper.addEntryBlock();
  OpBuilder hb = OpBuilder::atBlockEnd(body);
  auto bufferOf = [&](Type t) {
    auto tt = cast<RankedTensorType>(t);
    return MemRefType::get(tt.getShape(), tt.getElementType());
  };
  SmallVector<Value> inPtrs, outPtrs, outBufs;
  for (BlockArgument a : body->getArguments())
    inPtrs.push_back(contiguousAddress(hb, loc, helper, a, identityLayouts));
  for (Type t : resultTypes) {
    Value m = memref::AllocOp::create(hb, loc, bufferOf(t));
    outBufs.push_back(m);
    outPtrs.push_back(
        memref::ExtractAlignedPointerAsIndexOp::create(hb, loc, m));
  }
  emit(hb, inPtrs, outPtrs);
  SmallVector<Value> outs;
  for (auto [m, t] : llvm::zip(outBufs, resultTypes))
    outs.push_back(bufferization::ToTensorOp::create(hb, loc, t, m,
                                                     /*restrict=*/true,
                                                     /*writable=*/true));
  func::ReturnOp::create(hb, loc, outs);
  // One helper per distinct body: the products of a deep network's forward
  // and backward passes share a few shapes, and a helper per product made
  // most of a large program's LLVM dialect (59 of 75 functions for a
  // 20-layer MLP's gradient) and of its compile time.
  for (auto other : module.getOps<func::FuncOp>()) {
    if (other == helper || !other.getSymName().starts_with(prefix) ||
        other.getFunctionType() != helper.getFunctionType() ||
        other.getArgAttrsAttr() != helper.getArgAttrsAttr() ||
        other.isExternal())
      continue;
    if (OperationEquivalence::isRegionEquivalentTo(
            &other.getBody(), &helper.getBody(),
            OperationEquivalence::IgnoreLocations)) {
      helper.erase();
      return other.getSymName().str();
    }
  }
  return name;
}

namespace {

//===----------------------------------------------------------------------===//
// Host callbacks
//===----------------------------------------------------------------------===//

/// The code of an element type in a host callback's signature record
/// (EMBER_TYPE_CODE in Runtime.def; Python reads the same table).
int64_t hostTypeCode(Type t) { return runtime::typeCode(dtypeName(t)); }

/// `ember.host_callback` becomes a call of a buffer helper that calls
///
///   ember_host_callback(signature, operand addresses, result addresses)
///
/// where `signature` is an i64 record [callback id, #operands, #results,
/// then per value: type code, rank, dims...] and the address lists are
/// memrefs of indices.
struct HostCallbackLowering : public OpConversionPattern<HostCallbackOp> {
  HostCallbackLowering(const TypeConverter &converter, MLIRContext *ctx,
                       bool deviceBuffers)
      : OpConversionPattern(converter, ctx), deviceBuffers(deviceBuffers) {}
  bool deviceBuffers;
  LogicalResult
  matchAndRewrite(HostCallbackOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->getParentOfType<ModuleOp>();
    SmallVector<Type> resultTypes;
    if (failed(
            getTypeConverter()->convertTypes(op.getResultTypes(), resultTypes)))
      return failure();

    // The signature record, from the op's own (unconverted) types.
    SmallVector<int64_t> sig = {op.getCallbackIdAttr().getInt(),
                                (int64_t)op.getNumOperands(),
                                (int64_t)op.getNumResults()};
    auto describe = [&](Type t) {
      auto rt = cast<RankedTensorType>(t);
      sig.push_back(hostTypeCode(rt.getElementType()));
      sig.push_back(rt.getRank());
      sig.append(rt.getShape().begin(), rt.getShape().end());
    };
    for (Type t : op.getOperandTypes())
      describe(t);
    for (Type t : op.getResultTypes())
      describe(t);
    if (llvm::is_contained(sig, -1))
      return rewriter.notifyMatchFailure(op, "unsupported element type");

    Builder tb(op.getContext());
    auto i64 = tb.getI64Type();
    auto idx = tb.getIndexType();
    auto dynI64 = MemRefType::get({ShapedType::kDynamic}, i64);
    auto dynIdx = MemRefType::get({ShapedType::kDynamic}, idx);
    StringRef entry = "ember_host_callback";
    declareRuntimeFunction(module, entry);
    ValueRange ins = adaptor.getOperands();
    std::string name = buildBufferHelper(
        module, loc, "__ember_host_callback", TypeRange(ins), resultTypes,
        [&](OpBuilder &hb, ArrayRef<Value> inPtrs, ArrayRef<Value> outPtrs) {
          auto sigConst = arith::ConstantOp::create(
              hb, loc,
              DenseElementsAttr::get(
                  RankedTensorType::get({(int64_t)sig.size()}, i64),
                  ArrayRef<int64_t>(sig)));
          Value sigBuf = bufferization::ToBufferOp::create(
              hb, loc, MemRefType::get({(int64_t)sig.size()}, i64), sigConst,
              /*readOnly=*/true);
          auto addresses = [&](ArrayRef<Value> ptrs) -> Value {
            auto t = MemRefType::get(
                {(int64_t)std::max<size_t>(ptrs.size(), 1)}, idx);
            Value buf = memref::AllocaOp::create(hb, loc, t);
            for (auto [i, p] : llvm::enumerate(ptrs))
              memref::StoreOp::create(hb, loc, p, buf,
                                      ValueRange{indexConst(hb, loc, i)});
            return memref::CastOp::create(hb, loc, dynIdx, buf);
          };
          Value argBuf = addresses(inPtrs), resBuf = addresses(outPtrs);
          func::CallOp::create(
              hb, loc, entry, TypeRange{},
              ValueRange{memref::CastOp::create(hb, loc, dynI64, sigBuf),
                         argBuf, resBuf});
        },
        /*identityLayouts=*/deviceBuffers);
    rewriter.replaceOpWithNewOp<func::CallOp>(op, name, resultTypes, ins);
    return success();
  }
};

/// Bytes of a tensor's buffer (i1 elements take a byte, as in memory).
int64_t bufferBytes(Type t) {
  auto rt = cast<RankedTensorType>(t);
  Type e = rt.getElementType();
  int64_t parts = 1;
  if (auto c = dyn_cast<ComplexType>(e)) {
    parts = 2;
    e = c.getElementType();
  }
  return rt.getNumElements() * parts * ((e.getIntOrFloatBitWidth() + 7) / 8);
}

/// The run-time stack ops become calls of buffer helpers that move one value
/// at a time (docs/decisions.md, "Reverse mode through loops"):
///
///   ember_stack_push(handle in, handle out, data, bytes, lanes)   (per value)
///   ember_stack_read(handle, index, lanes, push bytes, offset, data,
///                    lane bytes)                             (per value)
///   ember_stack_release(handle in, handle out, index, lanes)
///   ember_stack_free(handle)
///
/// with the addresses of the handle, index and data buffers.
template <typename OpT> struct StackLowering : public OpConversionPattern<OpT> {
  StackLowering(const TypeConverter &converter, MLIRContext *ctx,
                bool deviceBuffers)
      : OpConversionPattern<OpT>(converter, ctx), deviceBuffers(deviceBuffers) {
  }
  bool deviceBuffers;
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpT op, Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->template getParentOfType<ModuleOp>();
    SmallVector<Type> resultTypes;
    if (failed(this->getTypeConverter()->convertTypes(op->getResultTypes(),
                                                      resultTypes)))
      return failure();
    constexpr bool isPush = std::is_same_v<OpT, StackPushOp>;
    constexpr bool isPop = std::is_same_v<OpT, StackPopOp>;
    StringRef base = isPush  ? "ember_stack_push"
                     : isPop ? "ember_stack_pop"
                             : "ember_stack_free";
    // (ember_stack_pop names only the helper: it calls read and release.)
    if (isPop) {
      declareRuntimeFunction(module, "ember_stack_read");
      declareRuntimeFunction(module, "ember_stack_release");
    } else {
      declareRuntimeFunction(module, base);
    }
    SmallVector<int64_t> bytes;
    if (isPush || isPop)
      for (Type t : isPush ? TypeRange(op->getOperandTypes()).drop_front()
                           : TypeRange(op->getResultTypes()).drop_front())
        bytes.push_back(bufferBytes(t));
    int64_t lanes = 0;
    if constexpr (isPush || isPop)
      lanes = (int64_t)op.getLanes().value_or(0);
    ValueRange ins = adaptor.getOperands();
    std::string name = buildBufferHelper(
        module, loc, ("__" + base).str(), TypeRange(ins), resultTypes,
        [&](OpBuilder &hb, ArrayRef<Value> inPtrs, ArrayRef<Value> outPtrs) {
          auto i64c = [&](int64_t v) {
            return (Value)arith::ConstantOp::create(hb, loc,
                                                    hb.getI64IntegerAttr(v));
          };
          if (isPush) {
            for (auto [j, n] : llvm::enumerate(bytes))
              func::CallOp::create(hb, loc, base, TypeRange{},
                                   ValueRange{j == 0 ? inPtrs[0] : outPtrs[0],
                                              outPtrs[0], inPtrs[j + 1],
                                              i64c(n), i64c(lanes)});
          } else if (isPop) {
            // A push holds its values one after another.
            int64_t entry = 0;
            for (int64_t n : bytes)
              entry += n;
            int64_t offset = 0;
            for (auto [j, n] : llvm::enumerate(bytes)) {
              func::CallOp::create(hb, loc, "ember_stack_read", TypeRange{},
                                   ValueRange{inPtrs[0], inPtrs[1], i64c(lanes),
                                              i64c(entry), i64c(offset),
                                              outPtrs[j + 1],
                                              i64c(lanes ? n / lanes : n)});
              offset += n;
            }
            func::CallOp::create(
                hb, loc, "ember_stack_release", TypeRange{},
                ValueRange{inPtrs[0], outPtrs[0], inPtrs[1], i64c(lanes)});
          } else {
            func::CallOp::create(hb, loc, base, TypeRange{},
                                 ValueRange{inPtrs[0]});
          }
        },
        /*identityLayouts=*/deviceBuffers);
    rewriter.replaceOpWithNewOp<func::CallOp>(op, name, resultTypes, ins);
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Linear algebra: cholesky and triangular_solve (Linalg.cpp in the runtime)
//===----------------------------------------------------------------------===//

namespace {
/// The number of matrices and their trailing sizes.
struct MatrixBatch {
  int64_t batch = 1, rows, cols;
  explicit MatrixBatch(RankedTensorType t) {
    int64_t r = t.getRank();
    for (int64_t d : t.getShape().drop_back(2))
      batch *= d;
    rows = t.getDimSize(r - 2);
    cols = t.getDimSize(r - 1);
  }
};

/// A call of runtime entry `entry` (with `consts` before the buffers) on
/// `operands`, returning tensors of `outTypes`.
ValueRange callLinalgEntry(ConversionPatternRewriter &rewriter, Operation *op,
                           StringRef prefix, StringRef entry,
                           SmallVector<int64_t> consts, ValueRange operands,
                           TypeRange outTypes, bool deviceBuffers) {
  Location loc = op->getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  declareRuntimeFunction(module, entry);
  std::string name = buildBufferHelper(
      module, loc, prefix, TypeRange(operands), outTypes,
      [&](OpBuilder &hb, ArrayRef<Value> ins, ArrayRef<Value> outs) {
        SmallVector<Value> args;
        for (int64_t v : consts)
          args.push_back(
              arith::ConstantOp::create(hb, loc, hb.getI64IntegerAttr(v)));
        args.append(ins.begin(), ins.end());
        args.append(outs.begin(), outs.end());
        func::CallOp::create(hb, loc, entry, TypeRange{}, args);
      },
      /*identityLayouts=*/deviceBuffers);
  return func::CallOp::create(rewriter, loc, name, outTypes, operands)
      .getResults();
}

/// The entry (without its _f32/_f64 suffix) and leading integer arguments
/// of each op's call.
std::pair<StringRef, SmallVector<int64_t>> entryOf(CholeskyOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getType()));
  return {"ember_cholesky", {m.batch, m.rows}};
}
std::pair<StringRef, SmallVector<int64_t>> entryOf(LuOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getOperand().getType()));
  return {"ember_lu", {m.batch, m.rows, m.cols}};
}
std::pair<StringRef, SmallVector<int64_t>> entryOf(EighOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getOperand().getType()));
  return {"ember_eigh", {m.batch, m.rows}};
}
std::pair<StringRef, SmallVector<int64_t>> entryOf(QrOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getOperand().getType()));
  return {"ember_qr", {m.batch, m.rows, m.cols, op.getFullMatrices()}};
}
std::pair<StringRef, SmallVector<int64_t>> entryOf(SvdOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getOperand().getType()));
  if (!op.computesUv())
    return {"ember_svd_values", {m.batch, m.rows, m.cols}};
  return {"ember_svd", {m.batch, m.rows, m.cols, op.getFullMatrices()}};
}
std::pair<StringRef, SmallVector<int64_t>> entryOf(TriangularSolveOp op) {
  MatrixBatch m(cast<RankedTensorType>(op.getType()));
  return {"ember_triangular_solve",
          {m.batch, m.rows, m.cols, op.getLower(), op.getTransposeA(),
           op.getUnitDiagonal()}};
}

std::pair<StringRef, SmallVector<int64_t>> entryOf(FftOp op) {
  auto t = cast<RankedTensorType>(op.getOperand().getType());
  ArrayRef<int64_t> n = op.getFftLengths();
  int64_t batch = 1;
  for (int64_t d : t.getShape().drop_back(n.size()))
    batch *= d;
  int64_t kind = llvm::StringSwitch<int64_t>(op.getFftType())
                     .Case("FFT", 0)
                     .Case("IFFT", 1)
                     .Case("RFFT", 2)
                     .Default(3);
  SmallVector<int64_t> args{batch, kind, int64_t(n.size())};
  for (size_t i = 0; i < 3; ++i)
    args.push_back(i < n.size() ? n[i] : 1);
  return {"ember_fft", args};
}

template <typename OpT>
struct LinalgCallLowering : public OpConversionPattern<OpT> {
  LinalgCallLowering(const TypeConverter &converter, MLIRContext *ctx,
                     bool deviceBuffers)
      : OpConversionPattern<OpT>(converter, ctx), deviceBuffers(deviceBuffers) {
  }
  bool deviceBuffers;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto [base, consts] = entryOf(op);
    // (The operand's element type: svd's first result is real.)
    Type e =
        cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    StringRef suffix = e.isF32() ? "_f32" : e.isF64() ? "_f64" : "_c";
    std::string entry = (base + suffix).str();
    if (auto c = dyn_cast<ComplexType>(e))
      entry += c.getElementType().isF32() ? "64" : "128";
    rewriter.replaceOp(op,
                       callLinalgEntry(rewriter, op, ("__" + base).str(), entry,
                                       consts, adaptor.getOperands(),
                                       op->getResultTypes(), deviceBuffers));
    return success();
  }
};
} // namespace

void mlir::ember::populateRuntimeCallLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    bool deviceBuffers) {
  patterns.add<HostCallbackLowering>(converter, patterns.getContext(),
                                     deviceBuffers);
  patterns
      .add<StackLowering<StackPushOp>, StackLowering<StackPopOp>,
           StackLowering<StackFreeOp>, LinalgCallLowering<CholeskyOp>,
           LinalgCallLowering<EighOp>, LinalgCallLowering<LuOp>,
           LinalgCallLowering<QrOp>, LinalgCallLowering<SvdOp>,
           LinalgCallLowering<TriangularSolveOp>, LinalgCallLowering<FftOp>>(
          converter, patterns.getContext(), deviceBuffers);
}
