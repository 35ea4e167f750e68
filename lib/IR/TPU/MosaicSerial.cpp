//===- MosaicSerial.cpp - Mosaic's attribute vocabulary -------------------===//
//
// The `tpu` attributes and types of serialized kernels
// (dialects/MosaicSerialOps.td).
//
//===----------------------------------------------------------------------===//
#include "DotDimensionNumbers.h"
#include "ember/IR/EmberTPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ember_tpu;

#include "ember/IR/MosaicSerialDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ember/IR/MosaicSerialAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ember/IR/MosaicSerialTypes.cpp.inc"

void serial::MosaicSerialDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ember/IR/MosaicSerialAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ember/IR/MosaicSerialTypes.cpp.inc"
      >();
}

Attribute serial::DotDimensionNumbersAttr::parse(AsmParser &parser, Type) {
  return parseDotDimensionNumbers<serial::DotDimensionNumbersAttr>(parser);
}
void serial::DotDimensionNumbersAttr::print(AsmPrinter &printer) const {
  printDotDimensionNumbers(printer, *this);
}
