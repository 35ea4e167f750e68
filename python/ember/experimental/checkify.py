"""`ember.experimental.checkify`: JAX's functionalized run-time checks."""

from ember._src.checkify import Error as Error
from ember._src.checkify import ErrorCategory as ErrorCategory
from ember._src.checkify import JaxRuntimeError as JaxRuntimeError
from ember._src.checkify import all_checks as all_checks
from ember._src.checkify import automatic_checks as automatic_checks
from ember._src.checkify import check as check
from ember._src.checkify import check_error as check_error
from ember._src.checkify import checkify as checkify
from ember._src.checkify import debug_check as debug_check
from ember._src.checkify import div_checks as div_checks
from ember._src.checkify import float_checks as float_checks
from ember._src.checkify import index_checks as index_checks
from ember._src.checkify import init_error as init_error
from ember._src.checkify import nan_checks as nan_checks
from ember._src.checkify import user_checks as user_checks
