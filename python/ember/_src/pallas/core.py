"""`pallas_call` and the kernel-side API of `jax.experimental.pallas`.

A kernel is a Python function over refs (`state.Ref`). `pallas_call` runs it
once per point of the grid, as JAX's interpret mode defines: a counted loop
over the grid points (last axis fastest) whose carry is every output and
scratch buffer; each step slices the blocks its `BlockSpec` index maps
choose out of the inputs and outputs, runs the kernel on refs holding them,
and writes the output blocks back. The kernel traces to ordinary Ember ops
(`state` discharges the refs), so the same program is both the interpreter
(`interpret=True`) and the CPU compilation, and it composes with `jit`,
`grad`, `vmap` and `custom_vjp` like any other code.

Blocks that overhang the array read what JAX's interpreter reads (NaN for
floats, the smallest integer otherwise) and their overhang is dropped on
write. Input blocks are fresh per grid step: a kernel's writes to an input
ref are not seen by later steps (alias the input to an output for that).
"""

import itertools
import math

import numpy as np

from ..._mlir import ir
from .. import ad, control_flow, core, lax, prng, state, tree_util
from .. import config as _config
from ..api import eager as _eager
from ..numpy import lax_numpy as jnp
from ..targets import cuda as cuda_target
from ..targets import tpu as tpu_target
from . import lanes, mosaic_gpu_compile, prng_state, tpu_interpret, tpu_kernel


class _NoBlockSpec:
    def __repr__(self):
        return "NoBlockSpec"


no_block_spec = _NoBlockSpec()


class MemorySpace:
    """Where a buffer lives. On the CPU every space is host memory; `ANY`
    hands the kernel the whole array unblocked."""

    def __init__(self, name):
        self.name = name

    def __call__(self, shape, dtype):
        return MemoryRef(shape, dtype, self)

    def __repr__(self):
        return self.name


ANY = MemorySpace("ANY")
HOST = MemorySpace("HOST")


class MemoryRef:
    """A scratch buffer's type: `shape`, `dtype`, memory space."""

    def __init__(self, shape, dtype, memory_space=None):
        self.shape, self.dtype, self.memory_space = tuple(shape), np.dtype(dtype), memory_space

    def __repr__(self):
        return f"MemoryRef({self.shape}, {self.dtype}, {self.memory_space})"


class Squeezed:
    """A block dimension of size 1 that the kernel does not see."""

    def __repr__(self):
        return "Squeezed()"


squeezed = Squeezed()


class Blocked:
    def __init__(self, block_size):
        self.block_size = int(block_size)


class Element:
    """A block dimension indexed by element offset (not block index), with
    `padding` (low, high) added around the array's dimension."""

    def __init__(self, block_size, padding=(0, 0)):
        self.block_size, self.padding = int(block_size), tuple(int(p) for p in padding)


class BlockSpec:
    """Which block of an array a grid point sees: `block_shape` (None for
    the whole array; a None or `Squeezed()` entry is a size-1 dimension the
    kernel does not see) and `index_map(*program_ids)`, the block's index
    (all zeros when None)."""

    def __init__(self, block_shape=None, index_map=None, pipeline_mode=None, *, memory_space=None):
        self.block_shape = None if block_shape is None else tuple(block_shape)
        self.index_map = index_map
        self.pipeline_mode = pipeline_mode
        self.memory_space = memory_space

    def __repr__(self):
        return f"BlockSpec(block_shape={self.block_shape}, index_map={self.index_map})"


class GridSpec:
    def __init__(self, grid=(), in_specs=no_block_spec, out_specs=no_block_spec, scratch_shapes=()):
        self.grid = _grid_tuple(grid)
        self.in_specs, self.out_specs, self.scratch_shapes = in_specs, out_specs, scratch_shapes


class CompilerParams:
    """Accepted for portability; the CPU ignores them."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class CostEstimate:
    def __init__(self, flops=0, transcendentals=0, bytes_accessed=0, **kw):
        self.flops, self.transcendentals, self.bytes_accessed = (
            flops,
            transcendentals,
            bytes_accessed,
        )


def _grid_tuple(grid):
    if grid is None:
        return ()
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    out = []
    for g in grid:
        if not isinstance(g, (int, np.integer)):
            raise NotImplementedError(
                f"pallas_call: a grid of traced sizes is not supported, got {g!r} "
                f"(at {core.where()})"
            )
        out.append(int(g))
    return tuple(out)


# The grid of the kernel being traced: [(program ids, grid sizes)], per
# thread (the checked TPU interpreter runs each device in a thread).
_grid_env = core._ThreadStack()


# Other kernel runners that know program ids (the plgpu interpreter): each
# returns (program ids, grid) for the calling thread, or None.
grid_env_providers = []


def _grid_axis(axis, what):
    """(program ids, grid) of the kernel being traced, `axis` checked."""
    compiling = mosaic_gpu_compile.active()
    providers = [compiling.grid_env] if compiling is not None else grid_env_providers
    for provider in providers:
        env = provider()
        if env is not None:
            ids, grid = env
            if not -len(grid) <= axis < len(grid):
                raise ValueError(f"{what}: axis {axis} is out of range for a grid of rank "
                                 f"{len(grid)} (at {core.where()})")
            return ids, grid
    if not _grid_env:
        raise ValueError(f"{what} can only be called inside a Pallas kernel (at {core.where()})")
    ids, grid = _grid_env[-1]
    if not -len(grid) <= axis < len(grid):
        raise ValueError(
            f"{what}: axis {axis} is out of range for a grid of rank {len(grid)} "
            f"(at {core.where()})"
        )
    return ids, grid


def program_id(axis):
    return _grid_axis(axis, "program_id")[0][axis]


def num_programs(axis):
    return _grid_axis(axis, "num_programs")[1][axis]


def cdiv(a, b):
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return -(-int(a) // int(b))
    a, b = core.as_value(a), core.as_value(b)
    return lax.div(a + b - 1, b)


def align_to(a, alignment):
    """JAX's `pl.align_to`: `a` rounded up to a multiple of `alignment`."""
    return cdiv(a, alignment) * alignment


def strides_from_shape(shape):
    """JAX's `pl.strides_from_shape`: the row-major strides (in elements)."""
    size = math.prod(shape)
    strides = []
    for s in shape:
        size //= s
        strides.append(int(size))
    return tuple(strides)


def delay(nanos):
    """JAX's `pl.delay`: waits `nanos` nanoseconds on the device. Only
    timing: the interpreters, and kernels lowered here, do not wait."""
    del nanos


def next_power_of_2(x):
    if x < 0:
        raise ValueError("next_power_of_2 takes a non-negative integer")
    return 1 if x == 0 else 1 << (int(x) - 1).bit_length()


def multiple_of(x, values):
    """A hint on GPUs; the value itself."""
    return x


def when(condition):
    """`@pl.when(c)` runs the decorated function only where `c` holds."""

    def decorator(f):
        if isinstance(condition, (bool, np.bool_)):
            if condition:
                f()
            return None
        if (kc := mosaic_gpu_compile.active()) is not None:
            kc.run_when(condition, f)
            return None
        if _exchanging_lanes() and not tpu_kernel.tracing() and \
                tpu_interpret.active() is None:
            # Devices or cores of one program (lanes) that may signal or
            # copy to each other: the body runs on every lane, its writes
            # masked, so that what a lane sends from it reaches a lane
            # whose own condition is false.
            with state.masked(condition):
                f()
            return None
        control_flow.cond(condition, f, lambda: None)
        return None

    return decorator


def _exchanging_lanes():
    """Whether the kernel runs as lanes of a named axis whose lanes are
    devices (shard_map) or TensorCores (core_map)."""
    from .. import parallel

    return bool(parallel.device_axes()) or bool(lanes.core_axes)


def loop(lower, upper, *, step=1, unroll=None):
    """`@pl.loop(lo, hi, step=s)` runs the decorated `body(i)` for `i` in
    range(lo, hi, s)."""
    if isinstance(step, (int, np.integer)) and step <= 0:
        raise ValueError(f"pl.loop: step must be positive, got {step} (at {core.where()})")

    def decorator(body):
        if (kc := mosaic_gpu_compile.active()) is not None:
            kc.run_loop(lower, upper, step, body)
            return None
        lo, hi = core.as_value(lower), core.as_value(upper)
        static = not isinstance(lo, core.Tracer) and not isinstance(hi, core.Tracer)
        if static and isinstance(step, (int, np.integer)):
            n = max(0, -(-(int(hi) - int(lo)) // int(step)))
            base, stride = int(lo), int(step)
        else:
            n = lax.div(hi - lo + step - 1, core.as_value(step))
            base, stride = lo, step

        def run(i, carry):
            body(base + i * stride)
            return carry

        control_flow.fori_loop(0, n, run, None)
        return None

    return decorator


def core_map(mesh, *, compiler_params=None, interpret=False, debug=False,
             cost_estimate=None, name=None, metadata=None, scratch_shapes=()):
    """`@pl.core_map(mesh)` runs the decorated function on every core of
    `mesh`: a plgpu `WarpMesh` inside a plgpu kernel, or the TensorCores of
    a TPU device (`pltpu.create_tensorcore_mesh`; the function reads and
    writes the refs it closes over)."""
    if not hasattr(mesh, "run"):
        raise NotImplementedError(f"core_map over {type(mesh).__name__} is not supported "
                                  f"(at {core.where()})")

    def decorator(fn):
        if _as_program(mesh):
            # In a traced program: a function the TPU target lowers to a
            # Mosaic kernel (TensorCoreMesh.run_program).
            mesh.run_program(lambda: fn(), compiler_params=compiler_params,
                             name=name or getattr(fn, "__name__", None))
            return
        if core._trace_stack or not getattr(mesh, "shares_refs", False):
            mesh.run(fn)
            return
        # Outside jit the cores' program is compiled (the refs it writes
        # are updated for the caller, as a jitted function's are).
        from ..api import jit

        jit(lambda: mesh.run(fn))()

    return decorator


def _as_program(mesh):
    """Whether `core_map(mesh)` here is a function of the traced program of
    its own (TPU TensorCores, in a program being traced, not inside a
    kernel being traced or interpreted)."""
    return bool(core._trace_stack) and hasattr(mesh, "run_program") and not (
        tpu_kernel.tracing() or tpu_interpret.active() is not None
        or kernel_interpreter.interpreting())


# JAX's Pallas options as states (`with pl.enable_debug_checks(True):`).
enable_debug_checks = _config._State("jax_pallas_enable_debug_checks")
enable_poison_buffers = _config._State("jax_pallas_poison_buffers")


def debug_check(condition, message):
    """JAX's `pl.debug_check`: with `pl.enable_debug_checks`, a
    `checkify.debug_check` of `condition` (reported under
    `checkify.checkify`); nothing otherwise."""
    if enable_debug_checks.value:
        from .. import checkify

        checkify.debug_check(condition, message)


def empty_ref_like(x):
    """JAX's `pl.empty_ref_like`: a new ref of `x`'s shape and dtype (a
    ShapeDtypeStruct or a scratch type such as `pltpu.VMEM(...)`), its
    contents unwritten."""
    if not isinstance(x, (MemoryRef, core.ShapeDtypeStruct)):
        raise ValueError(f"empty_ref_like does not support {type(x)}")
    return state.empty_ref(x)


def kernel(body=None, out_type=(), *, mesh, scratch_types=(), compiler_params=None,
           interpret=False, cost_estimate=None, debug=False, name=None, metadata=None):
    """JAX's `pl.kernel`: `kernel(body, out_type=..., mesh=...)(*args)` runs
    `body(*args as refs, *output refs, *scratch refs)` on every core of
    `mesh` (`pl.core_map` over a `run_scoped` of `scratch_types`) and
    returns the outputs (`out_type`: a pytree of ShapeDtypeStructs or
    arrays; one output ref, or one per element of a sequence). Array
    arguments become fresh refs; Ref arguments are the caller's, updated
    in place. Without `body`, a decorator."""
    if body is None:
        if isinstance(mesh, (list, tuple)):
            raise ValueError("mesh cannot be a sequence when using pl.kernel as a decorator.")
        return lambda fun: kernel(fun, out_type, mesh=mesh, scratch_types=scratch_types,
                                  compiler_params=compiler_params, interpret=interpret,
                                  cost_estimate=cost_estimate, debug=debug, name=name,
                                  metadata=metadata)
    if isinstance(body, (list, tuple)) or isinstance(mesh, (list, tuple)):
        raise NotImplementedError(
            f"pl.kernel: several bodies and meshes (MPMD kernels) are not supported "
            f"(at {core.where()})")
    if not getattr(mesh, "shares_refs", False):
        raise NotImplementedError(
            f"pl.kernel over a {type(mesh).__name__} is not supported (TPU TensorCore meshes "
            f"are; for GPU kernels use plgpu.kernel) (at {core.where()})")
    out_leaves, out_tree = tree_util.tree_flatten(out_type)
    scratch_leaves, scratch_tree = tree_util.tree_flatten(
        scratch_types, is_leaf=lambda t: hasattr(t, "shape") and hasattr(t, "dtype"))

    def call(*args):
        leaves, in_tree = tree_util.tree_flatten(args, is_leaf=lambda x: isinstance(
            x, state._RefBase))
        seen = set()
        for x in leaves:
            if isinstance(x, state._RefBase):
                if id(x) in seen:
                    raise NotImplementedError(
                        "Cannot pass the same ref into a mpmd map multiple times")
                seen.add(id(x))

        def run_body(in_refs, out_refs, scratch=None):
            """`body` on one core: the arguments' refs, the outputs' refs, and
            scratch refs (`scratch`, flat, or from `run_scoped`)."""
            outs = tree_util.tree_unflatten(out_tree, list(out_refs))
            kargs = list(tree_util.tree_unflatten(in_tree, list(in_refs)))
            kargs += list(outs) if isinstance(out_type, (list, tuple)) else [outs]
            if scratch is not None:
                s = tree_util.tree_unflatten(scratch_tree, list(scratch))
                body(*kargs, **s) if isinstance(scratch_types, dict) else body(*kargs, *s)
            elif isinstance(scratch_types, dict):
                run_scoped(lambda **s: body(*kargs, **s), **scratch_types)
            else:
                run_scoped(lambda *s: body(*kargs, *s), *scratch_types)

        if _as_program(mesh):
            # Arrays are the kernel's operands and the outputs its results
            # (Ref arguments are refs it closes over).
            arrays = [x for x in leaves if not isinstance(x, state._RefBase)]

            def per_core_refs(*refs):
                it = iter(refs[:len(arrays)])
                ins = [x if isinstance(x, state._RefBase) else next(it) for x in leaves]
                n = len(arrays) + len(out_leaves)
                run_body(ins, refs[len(arrays):n], refs[n:])

            outs = mesh.run_program(per_core_refs, compiler_params=compiler_params,
                                    name=name or getattr(body, "__name__", "kernel"),
                                    args=arrays, out_types=out_leaves,
                                    scratch_types=scratch_leaves)
            return tree_util.tree_unflatten(out_tree, outs)
        in_refs = [x if isinstance(x, state._RefBase) else state.new_ref(x) for x in leaves]
        out_refs = [state.empty_ref(o) for o in out_leaves]
        core_map(mesh, compiler_params=compiler_params, interpret=interpret,
                 name=name or getattr(body, "__name__", "kernel"))(
            lambda: run_body(in_refs, out_refs))
        return tree_util.tree_unflatten(out_tree, [state.freeze(r) for r in out_refs])

    return call


class _NoKernelInterpreter:
    """Until `mosaic_gpu.py` (the plgpu interpreter, which imports this
    module) registers itself as `kernel_interpreter`: no kernel runs."""

    @staticmethod
    def interpreting():
        return False

    @staticmethod
    def scoped_allocator(axes):
        return None


# The plgpu interpreter's hooks: whether this thread runs a kernel in it,
# its `run_scoped` allocator and its accumulators (`acc_ref`).
kernel_interpreter = _NoKernelInterpreter


def run_scoped(f, *types, collective_axes=(), **kw_types):
    """Calls `f` with fresh refs of `types` (scratch shapes, or pytrees of
    them; a None stays None), live only during the call. In a `plgpu`
    kernel, `collective_axes` naming the kernel's thread axis makes one
    allocation that every warpgroup of the block shares."""
    axes = (collective_axes,) if isinstance(collective_axes, str) else tuple(collective_axes)
    is_type = lambda t: not isinstance(t, (tuple, list, dict))  # noqa: E731
    def fresh(t):
        # (A type may say what a fresh buffer holds: plgpu.ACC, zeros; a
        # semaphore starts at zero, as in a pallas_call's scratch.)
        init = getattr(t, "initial_value", None)
        if init is None and getattr(t, "semaphore_kind", None):
            init = lambda: jnp.zeros(t.shape, t.dtype)  # noqa: E731
        return state.Ref(init() if init is not None else state.uninitialized(t.shape, t.dtype))

    if (kc := mosaic_gpu_compile.active()) is not None:
        # A kernel compiled for the GPU: its own buffers (SMEM, barriers,
        # wgmma accumulators).
        new = lambda t: kc.scoped(t, axes)  # noqa: E731
    elif (checker := tpu_interpret.active()) is not None:
        # A TPU kernel in the checked interpreter: buffers it watches.
        new = checker.scoped
    elif tpu_kernel.tracing():
        # A TPU kernel traced for the TPU target: Mosaic's scoped buffers.
        new = tpu_kernel.scoped
    else:
        # A kernel the interpreter runs (buffers with race checks), or none.
        new = kernel_interpreter.scoped_allocator(axes) or fresh

    def make(t):
        return None if t is None else new(t)

    refs = [tree_util.tree_map(make, t, is_leaf=is_type) for t in types]
    kw_refs = {k: tree_util.tree_map(make, t, is_leaf=is_type) for k, t in kw_types.items()}
    live = [r for r in tree_util.tree_leaves((refs, kw_refs)) if isinstance(r, state.Ref)]
    with state.scope(live):
        return f(*refs, **kw_refs)


def with_scoped(*types, collective_axes=(), **kw_types):
    def decorator(f):
        return run_scoped(f, *types, collective_axes=collective_axes, **kw_types)

    return decorator


def empty(shape, dtype, *, out_sharding=None):
    return state.uninitialized(shape, dtype)


def empty_like(x):
    return state.uninitialized(x.shape, x.dtype)


def broadcast_to(a, shape):
    return jnp.broadcast_to(a, shape)


def reciprocal(x, *, approx=False):
    return 1.0 / core.as_value(x)


def debug_print(fmt, *args):
    from ..callback import debug_print as _print

    _print(fmt, *args)


def _specs_for(specs, tree, what):
    """One BlockSpec (or None) per leaf of `tree`: `specs` is a prefix of it."""
    if specs is None or isinstance(specs, (BlockSpec, _NoBlockSpec)):
        return [specs] * len(tree_util.tree_leaves(tree))
    if (
        isinstance(specs, (list, tuple))
        and isinstance(tree, (list, tuple))
        and len(specs) == len(tree)
    ):
        return [s for sp, t in zip(specs, tree) for s in _specs_for(sp, t, what)]
    if isinstance(specs, dict) and isinstance(tree, dict) and specs.keys() == tree.keys():
        return [s for k in sorted(tree) for s in _specs_for(specs[k], tree[k], what)]
    raise ValueError(
        f"pallas_call: {what} must be a prefix of the structure of the "
        f"{'arguments' if what == 'in_specs' else 'outputs'} "
        f"({tree_util.tree_structure(tree)}), got {specs!r} (at {core.where()})"
    )


class _Block:
    """A BlockSpec resolved against one array."""

    def __init__(self, spec, shape, dtype, what):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        if isinstance(spec, _NoBlockSpec) or spec is None:
            spec = BlockSpec()
        self.whole = spec.block_shape is None or spec.memory_space is ANY
        bs = spec.block_shape if spec.block_shape is not None else self.shape
        if len(bs) != len(self.shape):
            raise ValueError(
                f"pallas_call: the block shape {tuple(bs)} of {what} must have "
                f"the rank of its array {self.shape} (at {core.where()})"
            )
        self.sizes, self.squeeze, self.element, self.padding = [], [], [], []
        for d in bs:
            if d is None or isinstance(d, Squeezed):
                self.sizes.append(1)
                self.squeeze.append(True)
                self.element.append(False)
                self.padding.append((0, 0))
            elif isinstance(d, Element):
                self.sizes.append(d.block_size)
                self.squeeze.append(False)
                self.element.append(True)
                self.padding.append(d.padding)
            else:
                n = d.block_size if isinstance(d, Blocked) else int(d)
                self.sizes.append(n)
                self.squeeze.append(False)
                self.element.append(False)
                self.padding.append((0, 0))
        self.index_map = spec.index_map
        self.memory_space = spec.memory_space
        self.pipeline_mode = getattr(spec, "pipeline_mode", None)
        self.what = what
        self.kernel_shape = tuple(n for n, s in zip(self.sizes, self.squeeze) if not s)

    def padded(self, x):
        """The array with Element padding around it and its last blocks
        completed with the uninitialized value."""
        cfg, need = [], False
        for n, b, (lo, hi), el in zip(self.shape, self.sizes, self.padding, self.element):
            full = n + lo + hi
            extra = 0 if el else (-full) % b
            cfg.append((lo, hi + extra, 0))
            need |= bool(lo or hi + extra)
        if not need:
            return x
        return lax.pad(x, state.uninitialized((), x.dtype), cfg)

    def unpadded(self, x):
        if tuple(x.shape) == self.shape:
            return x
        lo = [p[0] for p in self.padding]
        return lax.slice(x, lo, [a + n for a, n in zip(lo, self.shape)])

    def starts(self, ids):
        if self.index_map is None:
            idx = (0,) * len(self.shape)
        else:
            idx = self.index_map(*ids)
            if not isinstance(idx, (tuple, list)):
                idx = (idx,)
            idx = tuple(idx)
        if len(idx) != len(self.shape):
            raise ValueError(
                f"pallas_call: the index map of {self.what} returned {len(idx)} "
                f"indices for an array of rank {len(self.shape)} "
                f"(at {core.where()})"
            )
        return [i if el else _mul(i, b) for i, b, el in zip(idx, self.sizes, self.element)]

    def read(self, x, ids):
        if self.whole:
            return x
        block = lax.dynamic_slice(x, self.starts(ids), self.sizes)
        return jnp.reshape(block, self.kernel_shape)

    def write(self, x, block, ids):
        if self.whole:
            return block
        return lax.dynamic_update_slice(x, jnp.reshape(block, self.sizes), self.starts(ids))


def _mul(i, b):
    if isinstance(i, (int, np.integer)):
        return int(i) * b
    return core.as_value(i) * b


def _unravel(i, grid):
    """Program ids of flat grid point `i` (last axis fastest)."""
    ids, rest = [], i
    for n in reversed(grid):
        ids.append(lax.rem(rest, jnp.int32(n)))
        rest = lax.div(rest, jnp.int32(n))
    return tuple(reversed(ids))


def pallas_call(
    kernel,
    out_shape,
    *,
    grid_spec=None,
    grid=(),
    in_specs=no_block_spec,
    out_specs=no_block_spec,
    scratch_shapes=(),
    input_output_aliases=None,
    debug=False,
    interpret=False,
    name=None,
    compiler_params=None,
    cost_estimate=None,
    metadata=None,
):
    nprefetch = 0
    if grid_spec is not None:
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
        # Scalar prefetch (pltpu.PrefetchScalarGridSpec): the first operands
        # go to every index map and to the kernel first.
        nprefetch = getattr(grid_spec, "num_scalar_prefetch", 0)
    grid = _grid_tuple(grid)
    aliases = dict(input_output_aliases or {})
    out_leaves, out_tree = tree_util.tree_flatten(out_shape)
    for o in out_leaves:
        if not hasattr(o, "shape") or not hasattr(o, "dtype"):
            raise TypeError(
                f"pallas_call: out_shape must be a pytree of objects with shape "
                f"and dtype (e.g. ShapeDtypeStruct), got {o!r} (at {core.where()})"
            )
    kname = name or getattr(kernel, "__name__", "kernel")

    def operands(args):
        """(scalar prefetch, flat inputs, input indices that are PRNG keys)."""
        prefetch = [core.as_value(a) for a in args[:nprefetch]]
        # PRNG key inputs (a key made outside, read in the kernel): their
        # key data, the kernel's ref reading keys (_KeyRef).
        leaves = tree_util.tree_leaves(args[nprefetch:])
        keyed = [k for k, a in enumerate(leaves) if prng.is_key(a)]
        return prefetch, [a._base if prng.is_key(a) else core.as_value(a) for a in leaves], keyed

    def call(*args, checked=False, devices=None):
        """`devices`: (mesh axis, the arguments of each device) to run the
        checked interpreter over several devices (`args` are device 0's)."""
        prefetch, in_leaves, keyed = operands(args)
        args = args[nprefetch:]
        specs = _specs_for(in_specs, args, "in_specs")
        for k in keyed:
            if getattr(specs[k], "block_shape", None) is not None:
                raise NotImplementedError(
                    f"pallas_call: input {k} is an array of PRNG keys with a block shape; "
                    f"keys are passed whole (a BlockSpec with memory_space only) "
                    f"(at {core.where()})")
        kern = _with_key_refs(kernel, [nprefetch + k for k in keyed]) if keyed else kernel
        in_blocks = [
            _Block(s, x.shape, x.dtype, f"input {k}")
            for k, (s, x) in enumerate(zip(specs, in_leaves))
        ]
        out_blocks = [
            _Block(s, o.shape, o.dtype, f"output {k}")
            for k, (s, o) in enumerate(
                zip(_specs_for(out_specs, out_shape, "out_specs"), out_leaves)
            )
        ]
        # Alias indices count the prefetched operands.
        aliases_in = {i - nprefetch: o for i, o in aliases.items()}
        for i, o in aliases_in.items():
            if not (0 <= i < len(in_leaves) and 0 <= o < len(out_leaves)):
                raise ValueError(
                    f"pallas_call: input_output_aliases {{{i + nprefetch}: {o}}} is out of "
                    f"range (at {core.where()})"
                )
            x, ob = in_leaves[i], out_blocks[o]
            if tuple(x.shape) != ob.shape or x.dtype != ob.dtype:
                raise ValueError(
                    f"pallas_call: input {i} ({x.aval.str_short()}) cannot alias "
                    f"output {o} of shape {ob.shape} and dtype {ob.dtype} "
                    f"(at {core.where()})"
                )
        if checked:
            axis, per_device = devices or (None, [args])
            outs = tpu_interpret.run(kern, kname, grid,
                                     [operands(a)[:2] for a in per_device] if devices
                                     else [(prefetch, in_leaves)], in_blocks, out_blocks,
                                     _scratch_types(scratch_shapes), aliases_in, interpret,
                                     compiler_params, _grid_env, axis)
            return [tree_util.tree_unflatten(out_tree, o) for o in outs] if devices \
                else tree_util.tree_unflatten(out_tree, outs[0])
        flat = prefetch + in_leaves

        def interpreter(*vals):
            return _run(kern, kname, grid, list(vals[:nprefetch]), list(vals[nprefetch:]),
                        in_blocks, out_blocks, scratch_shapes, aliases_in, compiler_params)

        # The interpreter is a function of its own, which the TPU target
        # replaces by the kernel in Mosaic's form (targets/tpu.py).
        try:
            kernel_text, error = tpu_kernel.kernel_module(
                kern, kname, grid, _grid_env, prefetch, in_blocks, out_blocks,
                _scratch_types(scratch_shapes), compiler_params), None
        except Exception as e:  # only lowering for TPU reports it
            kernel_text, error = None, f"{kname}: {type(e).__name__}: {e}"
        name, out_avals, captured = core.trace_subfunction(
            interpreter, [v.aval for v in flat], name=f"pallas_{kname}", sources=flat)
        fn = core.find_function(name)
        with core.context():
            if error is None:
                fn.attributes[tpu_target.KERNEL_ATTR] = ir.StringAttr.get(kernel_text)
                fn.attributes[tpu_target.NAME_ATTR] = ir.StringAttr.get(kname)
                # (operand, output) pairs, operands counting scalar prefetch.
                fn.attributes[tpu_target.ALIASES_ATTR] = ir.DenseI64ArrayAttr.get(
                    [v for i, o in sorted(aliases.items()) for v in (i, o)])
            else:
                fn.attributes[tpu_target.ERROR_ATTR] = ir.StringAttr.get(error)
        # And as a GPU kernel, which the cuda target launches instead of the
        # interpreter's ops (targets/cuda.py); what it cannot compile keeps
        # the interpreter's ops.
        in_avals = [core.ShapedArray(v.shape, v.dtype) for v in in_leaves]
        shapes = tree_util.tree_map(lambda x: core.ShapeDtypeStruct(x.shape, x.dtype), args)
        key = cuda_target.register_kernel(
            f"pallas:{id(kernel)}:{name}:{in_avals}",
            lambda: gpu_kernel(in_avals, shapes, None, f"{name}_gpu").kernel_text())
        with core.context():
            fn.attributes[cuda_target.KERNEL_ATTR] = ir.StringAttr.get(key)
        outs = ad._call(name, flat + captured, out_avals)
        return tree_util.tree_unflatten(out_tree, outs)

    def wrapped(*args):
        if isinstance(interpret, tpu_interpret.InterpretParams):
            if not core._trace_stack:
                # On concrete arrays: the checked interpreter (tpu_interpret.py).
                return call(*args, checked=True)
            from .. import parallel

            frames = parallel._env.frames
            if not frames:
                return checked_in_trace(*args)
            if (len(frames) == 1 and frames[0][3] == 1
                    and parallel.device_axes() == [frames[0][0]]):
                # Inside shard_map over one mesh axis: every device runs
                # the kernel (remote DMAs and semaphores reach the others).
                return checked_in_trace(*args, axis=frames[0][:2])
            # Under other named axes (a vmap's, several mesh axes, devices
            # split over processes) the traced interpreter runs, unchecked.
        if not core._trace_stack:
            return _eager(call, args)
        return call(*args)

    def checked_in_trace(*args, axis=None):
        # Under jit (or another trace) the checked interpreter runs on the
        # call's values through a host callback, once per example under
        # vmap, as JAX's TPU interpret mode runs on callbacks; its errors
        # are the callback's (an InterpretError, raised by the call). Under
        # shard_map (`axis`: the mesh axis and its size) the callback takes
        # every device's operands at once and runs the devices together.
        from .. import callback

        leaves, tree = tree_util.tree_flatten(args)

        def host(*vals):
            vals = [jnp.asarray(v) for v in vals]
            if axis is None:
                outs = call(*tree_util.tree_unflatten(tree, vals), checked=True)
                return tree_util.tree_leaves(outs)
            name, n = axis
            if any(v.ndim != len(x.shape) + 1 or v.shape[0] != n for v, x in zip(vals, leaves)):
                raise NotImplementedError(
                    f"pallas_call {kname}: the checked TPU interpreter under shard_map runs "
                    f"the kernel once per device, not under a vmap inside the shard_map "
                    f"(use interpret=True there)")
            per_device = [tree_util.tree_unflatten(tree, [v[d] for v in vals])
                          for d in range(n)]
            outs = call(*per_device[0], checked=True, devices=(name, per_device))
            return [jnp.stack(o) for o in
                    zip(*[tree_util.tree_leaves(x) for x in outs])]

        structs = [core.ShapeDtypeStruct(tuple(o.shape), o.dtype) for o in out_leaves]
        outs = callback.pure_callback(host, structs, *leaves,
                                      vmap_method="sequential" if axis is None
                                      else "broadcast_all")
        return tree_util.tree_unflatten(out_tree, outs)

    def lower(*args, chip=None):
        """Ember (not in JAX): the kernel compiled for an NVIDIA GPU, one
        block of 128 threads per grid point, its blocks read and written
        in global memory (see mosaic_gpu_compile.py)."""
        leaves = tree_util.tree_leaves(args)
        return gpu_kernel([core.ShapedArray(tuple(x.shape), np.dtype(x.dtype))
                           for x in leaves], args, chip, kname)

    def gpu_kernel(in_avals, args, chip, gpu_name):
        if nprefetch or aliases:
            raise NotImplementedError(
                f"compiling a pallas_call for the GPU: scalar prefetch and "
                f"input_output_aliases are not supported yet (at {core.where()})")
        if len(grid) > 3:
            raise NotImplementedError(
                f"compiling a pallas_call for the GPU: a grid of rank {len(grid)} "
                f"(at most 3) (at {core.where()})")
        out_avals = [core.ShapedArray(tuple(o.shape), np.dtype(o.dtype)) for o in out_leaves]
        blocks = [_Block(s, a.shape, a.dtype, f"input {k}") for k, (s, a) in
                  enumerate(zip(_specs_for(in_specs, args, "in_specs"), in_avals))]
        blocks += [_Block(s, a.shape, a.dtype, f"output {k}") for k, (s, a) in
                   enumerate(zip(_specs_for(out_specs, out_shape, "out_specs"), out_avals))]
        for b in blocks:
            if any(b.element):
                raise NotImplementedError(
                    f"compiling a pallas_call for the GPU: Element block dimensions of "
                    f"{b.what} (at {core.where()})")
        names = tuple(f"pallas_grid_{d}" for d in range(len(grid)))

        def body(*refs):
            ids = mosaic_gpu_compile.active().grid_env()[0]
            views = []
            for b, ref in zip(blocks, refs):
                if b.whole:
                    views.append(ref)
                    continue
                # Blocks that overhang the array: its accesses are bounds-
                # checked (reads outside give what the interpreter reads,
                # writes outside are dropped).
                ref.masked = any(n % m for n, m in zip(b.shape, b.sizes))
                idx = tuple(st if sq else state.Slice(st, n) for st, n, sq in
                            zip(b.starts(ids), b.sizes, b.squeeze))
                views.append(ref.at[idx])
            kernel(*views, *refs[len(blocks):])

        return mosaic_gpu_compile.lower(body, in_avals, out_avals,
                                        _scratch_types(scratch_shapes), grid, names, (), (),
                                        1, None, chip, name=gpu_name)

    wrapped.lower = lower
    return wrapped


class _KeyRef:
    """A kernel's ref of PRNG keys, over a ref of their key data: reads give
    keys (`key_ref[...]`), as JAX's refs of key dtype do."""

    def __init__(self, ref):
        self._ref = ref

    @property
    def shape(self):
        return tuple(self._ref.shape[:-1])

    @property
    def dtype(self):
        return prng.KeyDType()

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        return prng.PRNGKeyArray(self._ref[(*idx, slice(None))] if idx != (Ellipsis,)
                                 else self._ref[...])

    def __setitem__(self, idx, value):
        raise NotImplementedError(f"pallas_call: writing a ref of PRNG keys (at {core.where()})")


def _with_key_refs(kernel, positions):
    """`kernel` with its refs at `positions` (key inputs) read as keys."""
    def keyed(*refs):
        refs = list(refs)
        for k in positions:
            refs[k] = _KeyRef(refs[k])
        return kernel(*refs)

    keyed.__name__ = getattr(kernel, "__name__", "kernel")
    return keyed


def _scratch_types(scratch_shapes):
    if hasattr(scratch_shapes, "shape"):
        scratch_shapes = (scratch_shapes,)
    leaves = list(scratch_shapes)
    for t in leaves:
        if not hasattr(t, "shape") or not hasattr(t, "dtype"):
            raise TypeError(
                f"pallas_call: scratch_shapes must hold buffer types with a shape "
                f"and a dtype, got {t!r} (at {core.where()})"
            )
    return leaves


# A grid's leading axes run on the CPU's threads when their points are
# independent (docs/design.md, "A Pallas grid on both cores"): the index
# maps are evaluated on every point (grids of at most this many points) and
# what the points write must be worth the threads' wake-up.
_MAX_CHECKED_GRID = 1 << 16
_MIN_PARALLEL_ELEMENTS = 1 << 15


def _block_index(block, ids):
    """The block indices `block`'s index map gives at the concrete program
    ids `ids`, or None where they are not Python integers inside the
    (padded) array."""
    if block.index_map is None:
        return (0,) * len(block.shape)
    try:
        idx = block.index_map(*ids)
    except Exception:  # (a map written for traced ids: no concrete answer)
        return None
    if not isinstance(idx, (tuple, list)):
        idx = (idx,)
    if len(idx) != len(block.shape):
        return None
    for i, n, b in zip(idx, block.shape, block.sizes):
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            return None
        if i < 0 or (i + 1) * b > n + (-n) % b:
            return None
    return tuple(int(i) for i in idx)


def _parallel_axes(grid, nprefetch, out_blocks, scratch_types, compiler_params):
    """How many leading axes of `grid` may run concurrently: the most `k`
    such that points differing in their first `k` ids write disjoint
    output blocks (checked on every point), every output blocked (not whole
    or indexed by element), no scalar prefetch (the maps would read it) and
    no ref of the program live; with scratch buffers, the `k` axes must be
    declared "parallel" (each group of points then gets its own scratch,
    as each TensorCore does). 0 runs the grid in order."""
    n = math.prod(grid)
    if (not grid or n < 2 or n > _MAX_CHECKED_GRID or nprefetch or not out_blocks
            or state.live_refs()):
        return 0
    if any(b.whole or any(b.element) for b in out_blocks):
        return 0
    if n * sum(math.prod(b.sizes) for b in out_blocks) < _MIN_PARALLEL_ELEMENTS:
        return 0
    try:
        semantics = tpu_kernel._semantics(compiler_params, len(grid))
    except ValueError:
        semantics = ["arbitrary"] * len(grid)
    points = list(itertools.product(*[range(g) for g in grid]))
    written = []
    for b in out_blocks:
        idx = []
        for p in points:  # (a map of jnp ops stops at the first point)
            if (i := _block_index(b, p)) is None:
                return 0
            idx.append(i)
        written.append(idx)
    best = 0
    for k in range(1, len(grid) + 1):
        if scratch_types and semantics[k - 1] != "parallel":
            break
        # (Disjointness fails for every longer prefix once it fails here.)
        if not all(_disjoint(points, idx, k) for idx in written):
            break
        best = k
    return best if math.prod(grid[:best]) >= 2 else 0


def _disjoint(points, idx, k):
    owner = {}
    for p, i in zip(points, idx):
        if owner.setdefault(i, p[:k]) != p[:k]:
            return False
    return True


def _run(kernel, kname, grid, prefetch, ins, in_blocks, out_blocks, scratch_shapes, aliases,
         compiler_params=None):
    scratch_types = _scratch_types(scratch_shapes)
    ins_p = [b.padded(x) for b, x in zip(in_blocks, ins)]
    outs0 = [state.uninitialized(b.shape, b.dtype) for b in out_blocks]
    for i, o in aliases.items():
        outs0[o] = ins[i]
    outs0 = [b.padded(x) for b, x in zip(out_blocks, outs0)]

    def new_scratch():
        # Semaphores count from zero; other scratch starts uninitialized.
        return [jnp.zeros(t.shape, t.dtype) if getattr(t, "semaphore_kind", None)
                else state.uninitialized(t.shape, t.dtype) for t in scratch_types]

    # Pallas TPU's PRNG state (prng_state.py), after the kernel's scratch.
    rng0 = jnp.zeros(prng_state.SHAPE, prng_state.DTYPE)
    n = math.prod(grid)
    in_groups = [False]  # (tracing concurrent groups: no PRNG state)

    def point(ids, carry):
        outs, scratch = carry
        pf_refs = [state.Ref(p) for p in prefetch]
        # What the index maps take: the program ids, then the prefetched refs.
        ids_pf = ids + tuple(pf_refs)
        in_refs = [state.Ref(b.read(x, ids_pf)) for b, x in zip(in_blocks, ins_p)]
        out_refs = [state.Ref(b.read(x, ids_pf)) for b, x in zip(out_blocks, outs)]
        scratch_refs = [state.Ref(s) for s in scratch]
        refs = pf_refs + in_refs + out_refs + scratch_refs
        _grid_env.append((ids, grid))
        prng_state.refs.append(prng_state.FORBIDDEN if in_groups[0] else scratch_refs[-1])
        try:
            with state.scope(refs):
                res = kernel(*refs[:-1])
        finally:
            prng_state.refs.pop()
            _grid_env.pop()
        if res is not None:
            raise ValueError(
                f"pallas_call: the kernel {kname} must return None, it returned "
                f"{type(res).__name__} (at {core.where()})"
            )
        new_outs = [b.write(x, r._value, ids_pf) for b, x, r in zip(out_blocks, outs, out_refs)]
        return new_outs, [r._value for r in scratch_refs]

    def points(axes, first, carry):
        """The points whose leading ids are `first`, over `axes`, in order."""
        m = math.prod(axes)
        if m == 1:
            return point(first + _unravel(jnp.int32(0), axes), carry)
        return control_flow.fori_loop(
            jnp.int32(0), jnp.int32(m),
            lambda i, c: point(first + _unravel(i, axes), c), carry)

    k = _parallel_axes(grid, len(prefetch), out_blocks, scratch_types, compiler_params)
    if n == 0:
        outs = outs0
    else:
        outs = None
        if k:
            # Groups of points differing in their first k ids are
            # independent: a loop over the groups marked parallel, each
            # group's points in order with scratch of its own. The PRNG
            # state is carried from point to point, which concurrent groups
            # would race on: a kernel using it runs its grid in order.
            def group(g, carry):
                outs, scratch = points(grid[k:], _unravel(g, grid[:k]),
                                       (carry, new_scratch() + [rng0]))
                return outs

            in_groups[0] = True
            try:
                outs = state.undone_on(prng_state.SequentialNeeded, lambda: (
                    control_flow.independent_loop(math.prod(grid[:k]), group, outs0)))
            finally:
                in_groups[0] = False
        if outs is None:
            outs, _ = points(grid, (), (outs0, new_scratch() + [rng0]))
    return [b.unpadded(x) for b, x in zip(out_blocks, outs)]


def run_state(f):
    """JAX's `run_state`: `run_state(f)(init)` runs `f` on refs holding the
    pytree `init` and returns their final values."""
    def run(init):
        leaves, tree = tree_util.tree_flatten(init)
        if (kc := mosaic_gpu_compile.active()) is not None and any(
                isinstance(x, mosaic_gpu_compile.AccInit) for x in leaves):
            # In a kernel compiled for the GPU, `plgpu.ACC.init(x)` is a
            # wgmma accumulator in registers.
            refs = [kc.acc_from(x.value) if isinstance(x, mosaic_gpu_compile.AccInit)
                    else state.Ref(x) for x in leaves]
            plain = [r for r in refs if isinstance(r, state.Ref)]
            with state.scope(plain):
                f(tree_util.tree_unflatten(tree, refs))
            return tree_util.tree_unflatten(tree, [
                r[...] if isinstance(x, mosaic_gpu_compile.AccInit) else state.values([r])[0]
                for r, x in zip(refs, leaves)])
        if any(isinstance(x, mosaic_gpu_compile.AccInit) for x in leaves):
            # In a kernel the interpreter runs: an accumulator whose final
            # read waits for its wgmmas.
            refs = [kernel_interpreter.acc_ref(x.value) if isinstance(x, mosaic_gpu_compile.AccInit)
                    else state.Ref(x) for x in leaves]
            with state.scope(refs):
                f(tree_util.tree_unflatten(tree, refs))
            return tree_util.tree_unflatten(tree, [r[...] for r in refs])
        refs = [state.Ref(x) for x in leaves]
        with state.scope(refs):
            f(tree_util.tree_unflatten(tree, refs))
        return tree_util.tree_unflatten(tree, state.values(refs))

    def call(init):
        # (In a plgpu kernel the interpreter runs, `f`'s barrier waits and
        # copies happen as it runs: no program is traced of them.)
        if core._trace_stack or kernel_interpreter.interpreting():
            return run(init)
        return _eager(run, (init,))

    return call
