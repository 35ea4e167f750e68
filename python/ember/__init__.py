"""Ember: a JAX-compatible array compiler on MLIR.

    import ember as jax
    import ember.numpy as jnp
"""

import importlib.util  # noqa: F401  (loaded by jax too; tools rely on it)

from ember import ad as ad
from ember import ad_checkpoint as ad_checkpoint
from ember import custom_batching as custom_batching
from ember import custom_derivatives as custom_derivatives
from ember import debug as debug
from ember import distributed as distributed
from ember import dlpack as dlpack
from ember import dtypes as dtypes
from ember import errors as errors
from ember import example_libraries as example_libraries
from ember import experimental as experimental
from ember import export as export
from ember import ffi as ffi
from ember import image as image
from ember import lax as lax
from ember import monitoring as monitoring
from ember import nn as nn
from ember import numpy as numpy
from ember import ops as ops
from ember import profiler as profiler
from ember import random as random
from ember import ref as ref
from ember import scipy as scipy
from ember import sharding as sharding
from ember import stages as stages
from ember import tree as tree
from ember import tree_util as tree_util
from ember import typing as typing
from ember._src.ad import custom_jvp as custom_jvp
from ember._src.ad import custom_vjp as custom_vjp
from ember._src.ad import fwd_and_bwd as fwd_and_bwd
from ember._src.ad import grad as grad
from ember._src.ad import hessian as hessian
from ember._src.ad import jacfwd as jacfwd
from ember._src.ad import jacobian as jacobian
from ember._src.ad import jacrev as jacrev
from ember._src.ad import jvp as jvp
from ember._src.ad import linear_transpose as linear_transpose
from ember._src.ad import linearize as linearize
from ember._src.ad import value_and_grad as value_and_grad
from ember._src.ad import vjp as vjp
from ember._src.ad_checkpoint import checkpoint as checkpoint
from ember._src.ad_checkpoint import checkpoint_policies as checkpoint_policies
from ember._src.ad_checkpoint import remat as remat
from ember._src.api import block_until_ready as block_until_ready
from ember._src.api import device_get as device_get
from ember._src.api import device_put as device_put
from ember._src.api import disable_jit as disable_jit
from ember._src.api import effects_barrier as effects_barrier
from ember._src.api import eval_shape as eval_shape
from ember._src.api import jit as jit
from ember._src.api import reshard as reshard
from ember._src.api import typeof as typeof
from ember._src.api_extras import *  # noqa: F403
from ember._src.basearray import Array as Array
from ember._src.batching import vmap as vmap
from ember._src.callback import pure_callback as pure_callback
from ember._src.config import config as config
from ember._src.config import debug_infs as debug_infs
from ember._src.config import debug_nans as debug_nans
from ember._src.config import enable_x64 as enable_x64
from ember._src.core import ShapeDtypeStruct as ShapeDtypeStruct
from ember._src.devices import Device as Device
from ember._src.devices import default_backend as default_backend
from ember._src.devices import default_device as default_device
from ember._src.devices import device_count as device_count
from ember._src.devices import devices as devices
from ember._src.devices import local_device_count as local_device_count
from ember._src.devices import local_devices as local_devices
from ember._src.devices import process_count as process_count
from ember._src.devices import process_index as process_index
from ember._src.jaxpr import make_jaxpr as make_jaxpr
from ember._src.mesh import NamedSharding as NamedSharding
from ember._src.mesh import PartitionSpec as P  # noqa: F401  (jax.P)
from ember._src.mesh import Shard as Shard
from ember._src.mesh import make_mesh as make_mesh
from ember._src.mesh import set_mesh as set_mesh
from ember._src.shard_map import pmap as pmap
from ember._src.shard_map import shard_map as shard_map
from ember._src.state import Ref as Ref
from ember._src.state import empty_ref as empty_ref
from ember._src.state import freeze as freeze
from ember._src.state import new_ref as new_ref
from ember._src.tree_util import tree_leaves as tree_leaves
from ember._src.tree_util import tree_map as tree_map
from ember._src.tree_util import tree_structure as tree_structure

__version__ = "0.1.0"



