//===- Bf16.cpp - 16-bit float conversions for compiled code --------------===//
//
// LLVM lowers f32 -> bf16 truncation (bf16 arithmetic is done in f32) to the
// libcall __truncsfbf2 on CPUs without native bf16 conversion (no
// AVX512-BF16 / AVX-NE-CONVERT), and f64 -> bf16 and f64 -> f16 to
// __truncdfbf2 and __truncdfhf2 on every x86-64 CPU. Neither this machine's
// libgcc (GCC 12) nor libLLVM exports them, so the JIT binds the names to
// these functions (EMBER_RUNTIME_ALIAS in Runtime.def). Written here rather
// than taken from compiler-rt, which the MLIR wheel does not ship.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include <cmath>
#include <cstdint>
#include <cstring>

/// The x86-64 ABI returns a bf16 or an f16 in the low 16 bits of XMM0, as
/// it returns a float: the result is a float whose low 16 bits are `h`.
static float inLowBits(uint32_t h) {
  float out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

static uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

/// f32 -> bf16, nearest with ties to even; NaNs stay quiet NaNs.
static uint32_t toBf16(float x) {
  uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

/// f32 -> f16, nearest with ties to even: overflow to infinity, subnormal
/// halves below 2^-14, NaNs quiet.
static uint32_t toF16(float x) {
  uint32_t u = bitsOf(x);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return sign | 0x7e00u;
  if (a >= 0x477ff000u) // 65520 and up: past 65504, ties go to infinity
    return sign | 0x7c00u;
  auto round = [](uint32_t m, unsigned shift) {
    uint32_t r = m >> shift, rest = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    return r + (rest > half || (rest == half && (r & 1u)));
  };
  if (a >= 0x38800000u) // a normal half: re-bias the exponent (127 -> 15)
    return sign | round(a - (112u << 23), 13);
  if (a < 0x33000000u) // below 2^-25: zero (2^-25 itself ties to zero)
    return sign;
  // A subnormal half counts units of 2^-24: the significand m (24 bits)
  // times 2^(e - 150) is m >> (126 - e) units.
  uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return sign | round(m, 126 - e);
}

/// f64 -> f32 rounded to odd (toward zero, the last bit set when inexact):
/// rounding that to a format at least two bits narrower rounds as the f64
/// itself would (no double rounding).
static float toOddFloat(double x) {
  float f = static_cast<float>(x);
  if (std::isnan(x) || static_cast<double>(f) == x)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(x))
    f = std::nextafter(f, 0.0f);
  return inLowBits(bitsOf(f) | 1u);
}

extern "C" float ember_truncsfbf2(float x) { return inLowBits(toBf16(x)); }

extern "C" float ember_truncdfbf2(double x) {
  return inLowBits(toBf16(toOddFloat(x)));
}

extern "C" float ember_truncdfhf2(double x) {
  return inLowBits(toF16(toOddFloat(x)));
}
