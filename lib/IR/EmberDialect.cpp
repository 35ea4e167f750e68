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

namespace {
/// Every ember op is pure and region-free: always legal to inline.
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
