"""Image manipulation: `ember.image` as `jax.image` (resize,
scale_and_translate, ResizeMethod)."""

from ember._src import image as _image
from ember._src.image import ResizeMethod as ResizeMethod
from ember.lax import Precision as _Precision

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


def resize(image, shape, method, antialias=True, precision=_Precision.HIGHEST):
    return _image.resize(image, shape, method, antialias, precision)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=_Precision.HIGHEST):
    return _image.scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                                      antialias, precision)


resize.__doc__ = _image.resize.__doc__
scale_and_translate.__doc__ = _image.scale_and_translate.__doc__
