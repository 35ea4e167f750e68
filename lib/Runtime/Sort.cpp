//===- Sort.cpp - the sort entry point of compiled code -------------------===//
//
// `ember.sort` on the CPU: the lowering maps each key to a 64-bit code whose
// unsigned order is the sort order (IEEE total order for floats) and moves
// the sort dimension innermost; this computes, per lane, the stable order of
// the indices (std::stable_sort: O(n log n), ties keep their index order),
// and the lowering gathers every operand by it.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

/// keys: numKeys planes of lanes x n codes; source: lanes x n, the index
/// (along the lane) that lands at each position.
extern "C" void ember_sort_keys(int64_t lanes, int64_t n, int64_t numKeys,
                                intptr_t keysAddr, intptr_t sourceAddr) {
  const auto *keys = reinterpret_cast<const uint64_t *>(keysAddr);
  auto *source = reinterpret_cast<int64_t *>(sourceAddr);
  const int64_t plane = lanes * n;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    int64_t *order = source + lane * n;
    std::iota(order, order + n, int64_t(0));
    const uint64_t *first = keys + lane * n;
    if (numKeys == 1) {
      std::stable_sort(order, order + n, [first](int64_t a, int64_t b) {
        return first[a] < first[b];
      });
      continue;
    }
    std::stable_sort(order, order + n, [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < numKeys; ++k) {
        const uint64_t *key = first + k * plane;
        if (key[a] != key[b])
          return key[a] < key[b];
      }
      return false;
    });
  }
}
