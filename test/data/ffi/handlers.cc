// FFI handlers for Ember's `ember.ffi` tests, written against XLA's FFI
// headers (`ember.ffi.include_dir()`, the ones jaxlib ships): what a JAX
// user compiles and registers with `jax.ffi.register_ffi_target`.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Each row of `x` (its last axis) divided by its root mean square.
ffi::Error rowRmsNorm(float eps, ffi::Buffer<ffi::F32> x,
                      ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  if (dims.size() == 0)
    return ffi::Error::InvalidArgument(
        "row_rms_norm needs an array, not a scalar");
  const int64_t width = dims.back();
  const int64_t total = x.element_count();
  const float *in = x.typed_data();
  float *out = y->typed_data();
  for (int64_t start = 0; width > 0 && start < total; start += width) {
    float squares = 0.0f;
    for (int64_t k = 0; k < width; ++k)
      squares += in[start + k] * in[start + k];
    const float scale = 1.0f / std::sqrt(squares / float(width) + eps);
    for (int64_t k = 0; k < width; ++k)
      out[start + k] = in[start + k] * scale;
  }
  return ffi::Error::Success();
}

// Attributes of every kind and two results: y[i] = x[i] * scale +
// offsets[i % len] (offsets from an array attribute), repeated `repeat`
// times over `y` accumulating; `total` = the sum of y as f64 plus
// `cfg["bias"]`; `mode` must be "add" or "sub" (sub negates y).
ffi::Error affine(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                  ffi::ResultBuffer<ffi::F64> total, int64_t repeat,
                  double scale, ffi::Span<const float> offsets,
                  std::string_view mode, ffi::Dictionary cfg) {
  if (mode != "add" && mode != "sub")
    return ffi::Error::InvalidArgument("affine: mode must be add or sub");
  auto bias = cfg.get<double>("bias");
  if (!bias.has_value())
    return bias.error();
  const int64_t n = x.element_count();
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    float v = 0.0f;
    for (int64_t r = 0; r < repeat; ++r)
      v += x.typed_data()[i] * float(scale) +
           (offsets.size() == 0 ? 0.0f : offsets[i % offsets.size()]);
    y->typed_data()[i] = mode == "sub" ? -v : v;
    sum += y->typed_data()[i];
  }
  total->typed_data()[0] = sum + *bias;
  return ffi::Error::Success();
}

// The element-wise sum of `x` and `acc` written into the result, which
// aliases `acc` (input_output_aliases): the result starts as acc's data.
ffi::Error accumulate(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> acc,
                      ffi::ResultBuffer<ffi::F32> out) {
  for (int64_t i = 0; i < x.element_count(); ++i)
    out->typed_data()[i] += x.typed_data()[i];
  return ffi::Error::Success();
}

// The first column of a matrix given in column-major order
// (input_layouts=[(1, 0)]): its first `rows` elements in memory.
ffi::Error firstColumn(ffi::Buffer<ffi::F32> m,
                       ffi::ResultBuffer<ffi::F32> out) {
  const int64_t rows = m.dimensions()[0];
  for (int64_t i = 0; i < rows; ++i)
    out->typed_data()[i] = m.typed_data()[i];
  return ffi::Error::Success();
}

// The forward pass of rowRmsNorm for reverse mode: y and, per row, the
// scale 1 / rms (the residual, of the shape of x without its last axis).
ffi::Error rowRmsNormFwd(float eps, ffi::Buffer<ffi::F32> x,
                         ffi::ResultBuffer<ffi::F32> y,
                         ffi::ResultBuffer<ffi::F32> scale) {
  auto dims = x.dimensions();
  if (dims.size() == 0)
    return ffi::Error::InvalidArgument("row_rms_norm_fwd needs an array");
  const int64_t width = dims.back();
  for (int64_t row = 0; width > 0 && row * width < x.element_count(); ++row) {
    const float *in = x.typed_data() + row * width;
    float squares = 0.0f;
    for (int64_t k = 0; k < width; ++k)
      squares += in[k] * in[k];
    const float s = 1.0f / std::sqrt(squares / float(width) + eps);
    scale->typed_data()[row] = s;
    for (int64_t k = 0; k < width; ++k)
      y->typed_data()[row * width + k] = in[k] * s;
  }
  return ffi::Error::Success();
}

// The backward pass: dx = s ct - s^3 x mean(ct x), per row.
ffi::Error rowRmsNormBwd(ffi::Buffer<ffi::F32> scale, ffi::Buffer<ffi::F32> x,
                         ffi::Buffer<ffi::F32> ct,
                         ffi::ResultBuffer<ffi::F32> dx) {
  const int64_t width = x.dimensions().back();
  for (int64_t row = 0; width > 0 && row * width < x.element_count(); ++row) {
    const float *in = x.typed_data() + row * width;
    const float *c = ct.typed_data() + row * width;
    const float s = scale.typed_data()[row];
    float dot = 0.0f;
    for (int64_t k = 0; k < width; ++k)
      dot += c[k] * in[k];
    for (int64_t k = 0; k < width; ++k)
      dx->typed_data()[row * width + k] =
          s * c[k] - s * s * s * in[k] * dot / float(width);
  }
  return ffi::Error::Success();
}

} // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(RowRmsNormFwd, rowRmsNormFwd,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RowRmsNormBwd, rowRmsNormBwd,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RowRmsNorm, rowRmsNorm,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(Affine, affine,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Attr<int64_t>("repeat")
                                  .Attr<double>("scale")
                                  .Attr<ffi::Span<const float>>("offsets")
                                  .Attr<std::string_view>("mode")
                                  .Attr<ffi::Dictionary>("cfg"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(Accumulate, accumulate,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    FirstColumn, firstColumn,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
