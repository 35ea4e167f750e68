//===- EmberDialect.cpp - dialect registration ----------------------------===//
#include "ember/IR/EmberDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ember;

#include "ember/IR/EmberDialect.cpp.inc"
#include "ember/IR/EmberEnums.cpp.inc"
#include "ember/IR/EmberInterfaces.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "ember/IR/EmberTypes.cpp.inc"

namespace {
/// Ember ops are always legal to inline (the ref ops read and write only
/// their function's ref arguments).
struct EmberInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void EmberDialect::initialize() {
  addInterfaces<EmberInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "ember/IR/EmberOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ember/IR/EmberAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ember/IR/EmberTypes.cpp.inc"
      >();
}

// ref_c1: a ref holds a statically shaped tensor of an element type Ember
// has (Ember_Element in EmberBase.td, whose ODS predicate is private to the
// ops' generated code: the same list, kept in step by test/Dialect/refs*.mlir).
LogicalResult RefType::verify(function_ref<InFlightDiagnostic()> emitError,
                              RankedTensorType valueType) {
  if (!valueType.hasStaticShape())
    return emitError() << "ref_c1: a ref holds a statically shaped tensor, not "
                       << valueType;
  Type e = valueType.getElementType();
  auto isEmberInt = [](Type t) {
    auto i = dyn_cast<IntegerType>(t);
    if (!i || i.isSigned())
      return false;
    unsigned w = i.getWidth();
    return w == 1
               ? i.isSignless()
               : (w == 2 || w == 4 || w == 8 || w == 16 || w == 32 || w == 64);
  };
  auto isEmberFloat = [](Type t) {
    auto f = dyn_cast<FloatType>(t);
    return f &&
           (t.isF16() || t.isBF16() || t.isF32() || t.isF64() ||
            (f.getWidth() <= 8 && !isa<Float6E2M3FNType, Float6E3M2FNType>(t)));
  };
  auto c = dyn_cast<ComplexType>(e);
  if (!(isEmberInt(e) || isEmberFloat(e) ||
        (c && (c.getElementType().isF32() || c.getElementType().isF64()))))
    return emitError() << "ref_c1: a ref holds a tensor of an element type "
                          "Ember has, not "
                       << e;
  return success();
}

Operation *EmberDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

InFlightDiagnostic mlir::ember::emitUserError(Operation *op,
                                              runtime::ErrorKind kind) {
  return op->emitOpError() << "[ember:" << runtime::errorKindId(kind) << "] ";
}

std::string mlir::ember::dtypeName(Type t) {
  if (t.isF16())
    return "float16";
  if (t.isBF16())
    return "bfloat16";
  if (t.isF32())
    return "float32";
  if (t.isF64())
    return "float64";
  if (auto i = dyn_cast<IntegerType>(t))
    return i.getWidth() == 1 ? std::string("bool")
                             : (i.isUnsigned() ? "uint" : "int") +
                                   std::to_string(i.getWidth());
  if (auto c = dyn_cast<ComplexType>(t))
    return c.getElementType().isF32() ? "complex64" : "complex128";
  return "";
}

std::string mlir::ember::avalString(RankedTensorType t) {
  std::string s = dtypeName(t.getElementType()) + "[";
  for (auto [i, d] : llvm::enumerate(t.getShape()))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}
