//===- DotDimensionNumbers.h - the syntax of dot_dimension_numbers -------===//
//
// `<[..], [..], [..], [..], [..], [..], [..]>`, shared by ember_tpu's
// attribute and its Mosaic (`tpu`) spelling for serialized kernels.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_LIB_IR_TPU_DOTDIMENSIONNUMBERS_H
#define EMBER_LIB_IR_TPU_DOTDIMENSIONNUMBERS_H

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::ember_tpu {

template <typename AttrT>
inline Attribute parseDotDimensionNumbers(AsmParser &parser) {
  SmallVector<SmallVector<int64_t>> lists(7);
  if (parser.parseLess())
    return {};
  for (unsigned i = 0; i < 7; ++i) {
    if (i && parser.parseComma())
      return {};
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                       [&]() -> ParseResult {
                                         int64_t v;
                                         if (parser.parseInteger(v))
                                           return failure();
                                         lists[i].push_back(v);
                                         return success();
                                       }))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return AttrT::get(parser.getContext(), lists[0], lists[1], lists[2], lists[3],
                    lists[4], lists[5], lists[6]);
}

template <typename AttrT>
inline void printDotDimensionNumbers(AsmPrinter &printer, AttrT a) {
  printer << '<';
  ArrayRef<int64_t> lists[] = {
      a.getLhsContractingDims(),    a.getRhsContractingDims(),
      a.getLhsNonContractingDims(), a.getRhsNonContractingDims(),
      a.getOutputDimOrder(),        a.getLhsBatchDims(),
      a.getRhsBatchDims()};
  llvm::interleaveComma(lists, printer, [&](ArrayRef<int64_t> l) {
    printer << '[';
    llvm::interleaveComma(l, printer);
    printer << ']';
  });
  printer << '>';
}

} // namespace mlir::ember_tpu

#endif // EMBER_LIB_IR_TPU_DOTDIMENSIONNUMBERS_H
