//===- FloatMode.cpp - the floating-point mode of compiled code ----------===//
//
// Compiled code runs with subnormal floats flushed to zero, as XLA's CPU
// code does (JAX on the CPU): inputs are read as zero (DAZ) and results
// are written as zero (FTZ), so `1e-39f * 2` is 0 and `log(1e-40f)` is -inf
// under Ember as under JAX. emberRuntimeCallChecked enters the mode for a
// call, the pool's workers run in it, and host callbacks leave it while
// their Python runs (docs/decisions.md, "Subnormals flushed").
//
//===----------------------------------------------------------------------===//
#include "ember-c/Runtime.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define EMBER_HAS_MXCSR 1
#endif

namespace {
#ifdef EMBER_HAS_MXCSR
constexpr unsigned kFlushBits = 0x8040; // MXCSR FTZ (bit 15) and DAZ (bit 6)
#endif
} // namespace

unsigned emberRuntimeEnterFloatMode(void) {
#ifdef EMBER_HAS_MXCSR
  unsigned mode = _mm_getcsr();
  _mm_setcsr(mode | kFlushBits);
  return mode;
#else
  return 0;
#endif
}

unsigned emberRuntimeLeaveFloatMode(void) {
#ifdef EMBER_HAS_MXCSR
  unsigned mode = _mm_getcsr();
  _mm_setcsr(mode & ~kFlushBits);
  return mode;
#else
  return 0;
#endif
}

void emberRuntimeRestoreFloatMode(unsigned mode) {
#ifdef EMBER_HAS_MXCSR
  _mm_setcsr(mode);
#else
  (void)mode;
#endif
}
