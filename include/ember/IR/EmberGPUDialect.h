//===- EmberGPUDialect.h - the ember_gpu kernel dialect ---------*- C++ -*-===//
#ifndef EMBER_IR_EMBERGPUDIALECT_H
#define EMBER_IR_EMBERGPUDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"

#include "ember/IR/EmberGPUDialect.h.inc"

#define GET_OP_CLASSES
#include "ember/IR/EmberGPUOps.h.inc"

#endif // EMBER_IR_EMBERGPUDIALECT_H
