//===- EmberTPUDialect.h - the ember_tpu kernel dialect ---------*- C++ -*-===//
#ifndef EMBER_IR_EMBERTPUDIALECT_H
#define EMBER_IR_EMBERTPUDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ember/IR/EmberTPUDialect.h.inc"
#include "ember/IR/EmberTPUEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberTPUAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ember/IR/EmberTPUTypes.h.inc"

#define GET_OP_CLASSES
#include "ember/IR/EmberTPUOps.h.inc"

// Mosaic's attribute vocabulary under its own `tpu` name, for serialized
// kernels (dialects/MosaicSerialOps.td).
#include "ember/IR/MosaicSerialDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ember/IR/MosaicSerialAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ember/IR/MosaicSerialTypes.h.inc"

#endif // EMBER_IR_EMBERTPUDIALECT_H
