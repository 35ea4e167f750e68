//===- Bf16.cpp - bf16 conversion for compiled code -----------------------===//
//
// LLVM lowers f32 -> bf16 truncation (bf16 arithmetic is done in f32) to the
// libcall __truncsfbf2 on CPUs without native bf16 conversion (no
// AVX512-BF16 / AVX-NE-CONVERT). Neither this machine's libgcc (GCC 12) nor
// libLLVM exports it, so the JIT binds the name to this function
// (EMBER_RUNTIME_ALIAS in Runtime.def).
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include <cstdint>
#include <cstring>

/// Rounds `x` to bf16 (nearest, ties to even; NaNs stay quiet NaNs). The
/// x86-64 ABI returns a bf16 in the low 16 bits of XMM0, as it returns a
/// float, so the result is a float whose low 16 bits are the bf16.
extern "C" float ember_truncsfbf2(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  uint32_t h;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    h = (u >> 16) | 0x40u;
  else
    h = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  float out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}
