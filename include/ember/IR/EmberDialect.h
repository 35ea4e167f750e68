//===- EmberDialect.h - the ember dialect -----------------------*- C++ -*-===//
#ifndef EMBER_IR_EMBERDIALECT_H
#define EMBER_IR_EMBERDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ember/IR/EmberDialect.h.inc"
#include "ember/IR/EmberEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberAttrs.h.inc"
#define GET_OP_CLASSES
#include "ember/IR/EmberOps.h.inc"

#endif // EMBER_IR_EMBERDIALECT_H
