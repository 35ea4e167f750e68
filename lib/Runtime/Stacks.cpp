//===- Stacks.cpp - run-time stacks of compiled code ----------------------===//
//
// Reverse mode through a while_loop with a run-time trip count saves each
// iteration's residuals on a stack (ember.stack_push / stack_pop).
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// The bytes of the values pushed so far; a handle is its address (0: none).
struct EmberStack {
  std::vector<unsigned char> bytes;
  int64_t lanes = 0; // of the pushed values (0: none)
};
} // namespace

/// Appends `n` bytes at `data` to the stack `*hin` (created when 0, with the
/// pushed values' `lanes`) and stores its handle in `*hout`.
extern "C" void ember_stack_push(intptr_t hin, intptr_t hout, intptr_t data,
                                 int64_t n, int64_t lanes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(hin));
  if (!s) {
    s = new EmberStack;
    s->lanes = lanes;
  }
  size_t at = s->bytes.size();
  s->bytes.resize(at + n); // grows geometrically
  if (n)
    std::memcpy(s->bytes.data() + at, reinterpret_cast<const void *>(data), n);
  *reinterpret_cast<int64_t *>(hout) = reinterpret_cast<int64_t>(s);
}

/// Copies value bytes of push number `*index` (pushes of `entry` bytes each;
/// the value at `offset` in the push) to `data`. With `lanes` > 0 the value
/// has that many lanes of `laneBytes` each, and lane j comes from push
/// `index[j]`: its lane j, or all of it when the pushes had no lanes (they
/// are then `entry / lanes` bytes). A negative index (a finished lane)
/// gives zeros.
extern "C" void ember_stack_read(intptr_t h, intptr_t index, int64_t lanes,
                                 int64_t entry, int64_t offset, intptr_t data,
                                 int64_t laneBytes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(h));
  auto *idx = reinterpret_cast<const int64_t *>(index);
  auto *out = reinterpret_cast<unsigned char *>(data);
  int64_t laneStride = laneBytes;
  if (lanes && s && s->lanes == 0) { // every lane reads the whole value
    entry /= lanes;
    offset /= lanes;
    laneStride = 0;
  }
  for (int64_t j = 0, n = std::max<int64_t>(lanes, 1); j < n; ++j) {
    int64_t k = idx[lanes ? j : 0];
    size_t from = (size_t)(k * entry + offset + j * laneStride);
    if (k < 0 || !s ||
        from + laneBytes > s->bytes.size()) // not reached for k >= 0
      std::memset(out + j * laneBytes, 0, laneBytes);
    else if (laneBytes)
      std::memcpy(out + j * laneBytes, s->bytes.data() + from, laneBytes);
  }
}

/// After the reads of push `*index` (of every lane's index): frees the stack
/// `*hin` when that was push 0 for all lanes (the last read of a backward
/// loop), storing the new handle (0 once freed) in `*hout`.
extern "C" void ember_stack_release(intptr_t hin, intptr_t hout, intptr_t index,
                                    int64_t lanes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(hin));
  auto *idx = reinterpret_cast<const int64_t *>(index);
  int64_t last = idx[0];
  for (int64_t j = 1; j < lanes; ++j)
    last = std::max(last, idx[j]);
  if (last <= 0) {
    delete s;
    s = nullptr;
  }
  *reinterpret_cast<int64_t *>(hout) = reinterpret_cast<int64_t>(s);
}

extern "C" void ember_stack_free(intptr_t h) {
  delete reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(h));
}
