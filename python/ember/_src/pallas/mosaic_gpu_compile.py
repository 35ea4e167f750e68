"""`plgpu` kernels compiled for NVIDIA GPUs: the kernel body becomes one
`gpu.func` of `ember_gpu` ops, with its arrays in registers.

Mosaic GPU's programming model, as JAX documents it: the body runs once per
warpgroup (128 threads) of every block; an array value belongs to the
warpgroup. Here an array of N elements is either

- *strided* (N a multiple of 128): thread `t` of the warpgroup holds
  `k = N / 128` of the row-major elements, in runs of `v = gcd(k, 4)`, run
  `r` starting at `(r * 128 + t) * v` (Mosaic's `WGStridedFragLayout`), as
  a `tensor<k x T>`; a reshape keeps the layout (it depends on the
  row-major index only), elementwise ops run on each thread's part, and
  reads and writes of refs move each thread's part; or
- *replicated* (anything else: scalars, small arrays): every thread holds
  the whole array and computes it (any op).

The body is traced once with `_KernelTrace`, whose `emit` retypes each ember
op for these layouts (or refuses it at the user's line), into a `gpu.func`
whose arguments are the GMEM operands (memrefs) and a pointer to the TMA
descriptors, and whose workgroup attributions are the SMEM scratch buffers
and the barriers. `plgpu` calls emit `ember_gpu` ops: a copy is issued by
one thread of the warpgroup, barrier waits track each barrier's phase in a
per-thread word, a `ClusterBarrier` arrival reaches every peer block of its
group (`barrier_arrive ... cta(%rank)`). The kernel form then goes through
`ember-to-linalg`, bufferization and the CUDA target's `nvvm` and `binary`
stages (PTX that ptxas checks).

A whole strided array reduced to a scalar combines the threads' partial
results with `gpu.all_reduce`; a reduction along the last axis leaves a
value in the *rows* layout (`reduce_rows`); `acc[...]` of a wgmma
accumulator (`plgpu.ACC`) is a value in the *wgmma* layout (PTX's
accumulator fragment). SMEM buffers with a swizzle transform are laid out
as TMA and the tensor cores want them (`_Swizzled`), and `plgpu.wgmma`
issues `ember_gpu.wgmma` on descriptors of them.

A value another thread's elements are needed from (a broadcast, a
transpose, a matrix product's operand) is read through an index map from
the buffer it was loaded from, or from a staging buffer in shared
memory (`_source`, `stage`, `gather`); products run on the CUDA cores
(`dot`); `lax.fori_loop` carries its values in per-thread buffers
(`run_fori`). docs/design.md ("Compiling plgpu kernels") has the whole
story.

A wgmma accumulator's reductions along its rows stay in registers in the
*WGMMA_ROW* layout (the thread's two rows per 64-row tile, combined over
the four threads of a quad by shuffles), and vectors in the WGMMA_ROW and
WGMMA_COL layouts broadcast back along rows or columns per thread (online
softmax without shared memory). A wgmma's B may be K-major (stored N x K,
given as `plgpu.transpose_ref(b, (1, 0))`). Values carried through loops
and conditionals keep their register layout. Under JAX's Warpgroup
lowering semantics SMEM buffers given no transforms get a swizzle
(`_swizzle_of`'s `infer`).

Not yet compiled (each a `NotImplementedError` at the kernel's line):
shape ops on strided arrays other than reshapes, broadcasts, transposes,
slices, reverses, concatenations, reductions and cumulative ops (sorts,
gathers, scatters), wgmma with 8-bit operands (no such arrays). Reductions
of a wgmma accumulator along its columns go through a staging buffer.
Nothing compiled here has run on a GPU.
"""

import contextlib
import math
import threading

import numpy as np

from ..._mlir import ir
from ..._mlir.passmanager import PassManager
from .. import control_flow, core, dtypes, state
from ..context import context
from ..targets import cuda

WARPGROUP = 128
TMA_DESCRIPTOR_BYTES = 128

# The ember ops with the `Elementwise` trait (dialects/EmberOps.td;
# test_plgpu_compile.py checks that the two lists agree).
ELEMENTWISE = frozenset(
    "ember." + n for n in """
    neg abs sign floor ceil round_nearest_afz round_nearest_even exp exp2 log log1p
    expm1 tanh logistic sin cos tan asin acos atan sinh cosh asinh acosh atanh sqrt
    rsqrt cbrt erf erf_inv lgamma digamma bessel_i0e bessel_i1e not population_count
    clz conj is_finite integer_pow real imag add sub mul div rem pow max min atan2 nextafter and
    or xor shift_left shift_right_logical shift_right_arithmetic complex compare
    select clamp convert threefry2x32 philox4x32""".split())

_local = threading.local()


def active():
    """The kernel being compiled on this thread, or None."""
    return getattr(_local, "compiler", None)


class _ControlFlow:
    """`lax` control flow in a kernel being compiled: scf ops."""

    @staticmethod
    def fori_loop(lower, upper, body, init):
        kc = active()
        return NotImplemented if kc is None else kc.run_fori(lower, upper, body, init)

    @staticmethod
    def cond(pred, true_fun, false_fun, operands):
        kc = active()
        return NotImplemented if kc is None else kc.run_cond(pred, true_fun, false_fun,
                                                              operands)

    @staticmethod
    def switch(index, branches, operands):
        kc = active()
        return NotImplemented if kc is None else kc.run_switch(index, branches, operands)

    @staticmethod
    def while_loop(cond_fun, body_fun, init):
        kc = active()
        return NotImplemented if kc is None else kc.run_while(cond_fun, body_fun, init)


control_flow.control_flow_hooks.append(_ControlFlow())


def _unsupported(what):
    return NotImplementedError(
        f"compiling a plgpu kernel for the GPU: {what} is not supported yet "
        f"(at {core.where()})")


def axis_extent(name, grid_names, grid, cluster_names, cluster):
    """The size of the grid or cluster axis `name` (nd_loop's collective
    axes, in the interpreter and here)."""
    if name in grid_names:
        return grid[grid_names.index(name)]
    if name in cluster_names:
        return cluster[cluster_names.index(name)]
    raise ValueError(f"nd_loop: {name!r} is not a grid or cluster axis (at {core.where()})")


def _strided(aval):
    n = math.prod(aval.shape)
    return aval.shape != () and n > 0 and n % WARPGROUP == 0


# A block's shared memory (scratch buffers, each 1024-byte aligned, and the
# staging area) is static; Hopper gives a block at most 227 KiB. (ptxas
# accepts static shared memory beyond 48 KiB for sm_90a and sm_100a; CUDA
# asks kernels that use more than 48 KiB to opt in when launched, which the
# host runtime, not built yet, must do.)
SMEM_LIMIT = 227 * 1024

# Every thread holds a replicated array whole: a bound on its size.
MAX_REPLICATED = 256


def _dtype_of(elem):
    """The NumPy dtype of an MLIR element type."""
    return np.dtype(dtypes.from_mlir_name(str(elem)))


def _check_replicated(aval):
    n = math.prod(aval.shape)
    if not _strided(aval) and n > MAX_REPLICATED:
        raise _unsupported(
            f"an array of shape {aval.shape} ({n} elements, not a multiple of {WARPGROUP}: "
            f"every thread would hold all of it; at most {MAX_REPLICATED})")


def _frag_aval(aval):
    """The per-thread aval of a value of `aval`."""
    if _strided(aval):
        return core.ShapedArray((math.prod(aval.shape) // WARPGROUP,), aval.dtype)
    return core.ShapedArray(aval.shape, aval.dtype)


class _Swizzled:
    """The layout of an SMEM buffer with `TilingTransform((r, S))` and
    `SwizzleTransform(sw)` (S elements = sw bytes): each matrix (the last
    two dimensions, R x C) is stored as C / S column strips, one after the
    other; a strip holds its R rows of sw bytes contiguously, and the
    16-byte chunks of each row are permuted as TMA and the tensor cores
    expect (CuTe's Swizzle<log2(sw / 16), 4, 3> on byte addresses: bits
    7.. of the address XORed into bits 4..). This is JAX's tiled layout up
    to the order of the tiles; TMA fills one strip per copy, and wgmma
    reads a strip's 8-row groups 8 * sw bytes apart."""

    def __init__(self, shape, dtype, swizzle):
        self.swizzle = int(swizzle)
        self.itemsize = np.dtype(dtype).itemsize
        self.cols = self.swizzle // self.itemsize
        self.rows, self.width = int(shape[-2]), int(shape[-1])

    def strip_elems(self):
        return self.rows * self.cols

    def offset(self, r, c):
        """Element (r, c)'s offset (elements) in the matrix, unswizzled."""
        return c // self.cols * self.strip_elems() + r * self.cols + c % self.cols

    def swizzle_element(self, e):
        """Where element offset `e` (from a 1024-byte aligned start) is
        stored: Swizzle<log2(sw / 16), 4, 3> on its byte address."""
        shift = int(math.log2(self.itemsize))
        return e ^ (((e >> (7 - shift)) & (self.swizzle // 16 - 1)) << (4 - shift))

    def k_major_offsets(self):
        """(leading, stride) byte offsets of a K-major wgmma operand (A):
        the leading one is unused with a swizzle; 8-row groups are 8 rows
        of `swizzle` bytes apart."""
        return 16, 8 * self.swizzle

    def mn_major_offsets(self):
        """(leading, stride) byte offsets of an MN-major wgmma operand (B,
        N-major): swizzle atoms along N are a strip apart; 8-row groups
        along K are 8 rows apart."""
        return self.strip_elems() * self.itemsize, 8 * self.swizzle


def _swizzle_of(transforms, shape, dtype, infer=False):
    """The `_Swizzled` layout an SMEM buffer's transforms ask for, or None
    (no swizzle: the buffer stays row-major). With `infer` (JAX's
    Warpgroup lowering semantics, where transforms are inferred), a buffer
    given none whose matrices fit one is laid out with the widest swizzle
    its rows fill (a tensor-core operand must be swizzled; the layout is
    invisible to the kernel otherwise: register accesses and TMA copies
    follow it)."""
    if infer and not transforms and len(shape) >= 2 and shape[-2] % 8 == 0:
        row = shape[-1] * np.dtype(dtype).itemsize
        for sw in (128, 64, 32):
            if row % sw == 0:
                return _Swizzled(shape, dtype, sw)
        return None
    tiling = swizzle = None
    for t in transforms:
        if hasattr(t, "tiling"):
            tiling = tuple(t.tiling)
        elif hasattr(t, "swizzle"):
            swizzle = int(t.swizzle)
        else:
            raise _unsupported(f"an SMEM transform {type(t).__name__}")
    if swizzle is None:
        return None
    itemsize = np.dtype(dtype).itemsize
    if swizzle not in (32, 64, 128):
        raise ValueError(f"SwizzleTransform: the swizzle must be 32, 64 or 128 bytes, got "
                         f"{swizzle} (at {core.where()})")
    cols = swizzle // itemsize
    if tiling is not None and tiling[-1] != cols:
        raise ValueError(f"TilingTransform{tiling} with a {swizzle}-byte swizzle: tiles of "
                         f"{np.dtype(dtype)} must be {cols} elements wide (at {core.where()})")
    if len(shape) < 2 or shape[-1] % cols or shape[-2] % 8:
        raise _unsupported(f"a {swizzle}-byte swizzled SMEM buffer of shape {tuple(shape)} "
                           f"(the rows must be a multiple of 8 and the columns of {cols})")
    return _Swizzled(shape, dtype, swizzle)


# wgmma's accumulator: a 64 x N tile per instruction, each thread holding
# N / 2 f32 values (PTX's layout for m64nNk16: thread t of the warpgroup,
# register r = 4 j + 2 i + c holds row 16 (t // 32) + (t % 32) // 4 + 8 i,
# column 8 j + 2 (t % 4) + c).
WGMMA_M = 64
WGMMA_MAX_N = 256


# Operand types of wgmma (f32 is read as tf32) and the depth of one
# instruction: a 32-byte slice of a row. (The tensor cores' 8-bit floats
# are in the dialect, `ember_gpu.wgmma`; Ember's arrays have no 8-bit float
# dtypes yet.)
_WGMMA_DTYPES = tuple(np.dtype(t) for t in (np.float16, dtypes.bfloat16, np.float32))


def _wgmma_k(dtype):
    return 32 // np.dtype(dtype).itemsize


def _wgmma_element(dtype):
    """The `element_type` of `ember_gpu.wgmma` for operands of `dtype`."""
    if np.dtype(dtype) == np.float32:
        return ir.FloatTF32Type.get()
    return core.mlir_type(core.ShapedArray((), dtype)).element_type


def _check_acc_shape(shape, what):
    if len(shape) != 2 or shape[0] % WGMMA_M or shape[1] % 8 or shape[1] < 8:
        raise _unsupported(f"{what} of shape {tuple(shape)} (wgmma accumulates (64 m) x "
                           f"(8 n) tiles)")


def _wgmma_count(shape):
    return shape[0] // WGMMA_M * shape[1] // 2


# tcgen05's accumulator in TMEM: 128 lanes (rows) by N 32-bit columns; a
# warpgroup reads it with tcgen05.ld's 32x32b shape, thread t its lane t.
TMEM_LANES = 128
MAX_TMEM_ROW = 256  # columns a thread holds in registers


def _check_tmem_shape(shape, what):
    if len(shape) != 2 or shape[0] != TMEM_LANES or not 0 < shape[1] <= MAX_TMEM_ROW:
        raise _unsupported(f"{what} of shape {tuple(shape)} (128 lanes of at most "
                           f"{MAX_TMEM_ROW} columns)")


def _plus(start, d):
    """A window start (int, or index value) plus a static offset, as
    `_matrix_offset` takes it."""
    return start + d if isinstance(start, int) else (start, d)


def tcgen05_instruction(m, n, dtype):
    """tcgen05.mma's 32-bit instruction descriptor (kind::f16) for an
    M x N x 16 MMA of f16/bf16 A (K-major) and B (N-major) into f32: D's
    type in bits 4-5 (f32: 1), A's and B's in bits 7-9 and 10-12 (f16: 0,
    bf16: 1), B transposed (bit 16), N >> 3 in bits 17-22, M >> 4 in bits
    24-28 (PTX's table for .kind::f16)."""
    t = 1 if np.dtype(dtype) == np.dtype(dtypes.bfloat16) else 0
    return (1 << 4) | (t << 7) | (t << 10) | (1 << 16) | ((n >> 3) << 17) | ((m >> 4) << 24)


def _layout_count(kind, shape):
    """The elements per thread of a value of `shape` in a register layout."""
    if kind == "wgmma":
        return _wgmma_count(shape)
    if kind == "wgmma_row":
        return shape[0] // WGMMA_M * 2
    if kind == "wgmma_col":
        return shape[0] // 4
    return shape[1]


class _RowsLayout(tuple):
    """Where a reduction along rows leaves its result: `width` elements per
    row (C), runs of `v`, `runs` runs per thread, `rows` rows."""

    def __new__(cls, width, v, runs, rows):
        return super().__new__(cls, (width, v, runs, rows))

    width = property(lambda self: self[0])
    v = property(lambda self: self[1])
    runs = property(lambda self: self[2])
    rows = property(lambda self: self[3])


class _PipelineBarrier:
    """The kind of barriers `alloc_barriers` makes (a plain Barrier)."""

    def __init__(self, num_arrivals, num_barriers):
        self.num_arrivals, self.num_barriers = num_arrivals, num_barriers


class _KernelTrace(core.Trace):
    """Traces the kernel body into the gpu.func's block (see the module's
    docstring for the layouts)."""

    def __init__(self, compiler, block):
        self.ctx = context()
        self.parent = None
        self.concrete = False
        self.root = self
        self.module = compiler.module
        self.name = "plgpu_kernel"
        self.block = block
        self.func_op = None
        self.captured = []
        self._capture_args = {}
        core._init_ref_state(self)
        self.kc = compiler

    def emit(self, name, operands, result_avals, attributes=None, regions=0):
        kc = self.kc
        if regions:
            raise _unsupported(f"`{name.removeprefix('ember.')}` (lax control flow)")
        if name == "ember.optimization_barrier":
            # (`lax.optimization_barrier`: the kernel's ops are not moved
            # across it; its values pass through in their layouts.)
            return [core.Tracer(self, v, a) for v, a in zip(operands, result_avals)]
        if any(v in kc.wgmma_values for v in operands):
            return self._emit_wgmma(name, operands, result_avals, attributes)
        strided = [_strided(a) for a in result_avals]
        in_strided = [v in kc.strided_values for v in operands]
        in_rows = [kc.rows.get(v) for v in operands]
        if not any(strided) and not any(in_strided) and not any(in_rows):
            for a in result_avals:
                _check_replicated(a)
            return super().emit(name, operands, result_avals, attributes)
        if any(in_rows):
            return self._emit_rows(name, operands, in_rows, result_avals, attributes, strided)
        if name in ELEMENTWISE and all(in_strided) and all(strided):
            return self._emit_retyped(name, operands, result_avals, attributes)
        if name == "ember.reduce" and in_strided[0]:
            shape = ir.RankedTensorType(kc.logical_types[operands[0]]).shape
            if result_avals[0].shape == ():
                return [kc.reduce_all(operands[0], result_avals[0], attributes["kind"])]
            dims = list(attributes["dimensions"])
            if dims == [len(shape) - 1] and kc.rows_reducible(shape, result_avals[0],
                                                              attributes["kind"]):
                return [kc.reduce_rows(operands[0], shape, result_avals[0],
                                       attributes["kind"])]
            return [kc.reduce_by_reads(operands[0], kc.aval_of(operands[0]),
                                       result_avals[0], dims, attributes["kind"])]
        if name == "ember.reverse" and in_strided[0]:
            rdims = list(attributes["dimensions"])
            shape = kc.aval_of(operands[0]).shape
            return [kc.gather(operands[0], kc.aval_of(operands[0]), result_avals[0],
                              lambda i: [kc.arith("subi", kc.index(n - 1), x) if d in rdims
                                         else x for d, (x, n) in enumerate(zip(i, shape))])]
        if name == "ember.concatenate" and any(in_strided) and strided[0]:
            return [kc.concatenate(operands, ir.IntegerAttr(attributes["dimension"]).value,
                                   result_avals[0])]
        if name == "ember.cumulative" and in_strided[0]:
            rev = "reverse" in attributes and ir.BoolAttr(attributes["reverse"]).value
            return [kc.cumulative(operands[0], kc.aval_of(operands[0]), result_avals[0],
                                  ir.IntegerAttr(attributes["axis"]).value,
                                  attributes["kind"], rev)]
        if name == "ember.slice" and in_strided[0]:
            starts, strides_ = list(attributes["start_indices"]), list(attributes["strides"])
            return [kc.read_view(operands[0], kc.aval_of(operands[0]), result_avals[0],
                                 lambda i: [kc.arith("addi", kc.arith("muli", x, st), s0)
                                            for x, st, s0 in zip(i, strides_, starts)])]
        if name == "ember.dynamic_slice" and in_strided[0]:
            in_shape = kc.aval_of(operands[0]).shape
            sizes = list(attributes["slice_sizes"])
            # XLA's rule: starts are clamped so that the slice fits.
            starts = [kc.clamp(kc.index(core.Tracer(self, v, core.ShapedArray(
                (), _dtype_of(ir.RankedTensorType(v.type).element_type)))), 0, n - z)
                for v, n, z in zip(operands[1:], in_shape, sizes)]
            return [kc.read_view(operands[0], kc.aval_of(operands[0]), result_avals[0],
                                 lambda i: [kc.arith("addi", x, s0)
                                            for x, s0 in zip(i, starts)])]
        if (name == "ember.broadcast_in_dim" and all(strided)
                and ir.RankedTensorType(operands[0].type).rank == 0):
            # A scalar broadcast: each thread fills its part.
            return self._emit_retyped(name, operands, result_avals, attributes)
        if name in ("ember.reshape", "ember.broadcast_in_dim") and in_strided[0]:
            # Row-major order is kept (a reshape; a broadcast that only adds
            # unit dimensions, in order): the same per-thread part.
            keeps_order = name == "ember.reshape" or all(
                a < b for a, b in zip(list(attributes["broadcast_dimensions"]),
                                      list(attributes["broadcast_dimensions"])[1:]))
            if keeps_order and math.prod(result_avals[0].shape) == math.prod(
                    ir.RankedTensorType(kc.logical_types[operands[0]]).shape):
                return [self._wrap(self._same(operands[0]), result_avals[0])]
            if name == "ember.broadcast_in_dim" and strided[0]:
                in_shape = ir.RankedTensorType(kc.logical_types[operands[0]]).shape
                dims = list(attributes["broadcast_dimensions"])
                return [kc.gather(operands[0], kc.aval_of(operands[0]), result_avals[0],
                                  lambda i: [kc.index(0) if n == 1 else i[d]
                                             for n, d in zip(in_shape, dims)])]
        if name == "ember.transpose" and in_strided[0] and strided[0]:
            perm = list(attributes["permutation"])
            inv = [perm.index(d) for d in range(len(perm))]
            return [kc.gather(operands[0], kc.aval_of(operands[0]), result_avals[0],
                              lambda i: [i[inv[d]] for d in range(len(perm))])]
        if name == "ember.dot_general":
            return [kc.dot(operands[0], operands[1], kc.aval_of(operands[0]),
                           kc.aval_of(operands[1]), result_avals[0], attributes)]
        if all(strided) and not any(in_strided):
            if name == "ember.broadcast_in_dim":
                # Each thread picks its elements from the (small) operand.
                in_shape = ir.RankedTensorType(operands[0].type).shape
                dims = list(attributes["broadcast_dimensions"])
                return [kc.pick(operands[0], result_avals[0],
                                lambda i: [kc.index(0) if n == 1 else i[d]
                                           for n, d in zip(in_shape, dims)])]
            if name == "ember.iota":
                dim = ir.IntegerAttr(attributes["iota_dimension"]).value
                return [kc.iota(result_avals[0], dim)]
            if name == "ember.constant" and attributes["value"].is_splat:
                aval = result_avals[0]
                value = ir.DenseElementsAttr.get_splat(
                    core.mlir_type(_frag_aval(aval)), attributes["value"].get_splat_value())
                return self._emit_retyped(name, [], result_avals, {"value": value})
            # Computed replicated, then each thread takes its part.
            for a in result_avals:
                if math.prod(a.shape) > MAX_REPLICATED:
                    raise _unsupported(f"`{name.removeprefix('ember.')}` making an array of "
                                       f"{a.shape} from values every thread holds")
            outs = super().emit(name, operands, result_avals, attributes)
            return [kc.take_part(o) for o in outs]
        raise _unsupported(f"`{name.removeprefix('ember.')}` on arrays spread over the "
                           f"warpgroup's threads ({', '.join(str(a) for a in result_avals)})")

    def _emit_rows(self, name, operands, in_rows, result_avals, attributes, strided):
        """Ops on values in the rows layout (see `reduce_rows`)."""
        kc = self.kc
        layout = next(lay for lay in in_rows if lay)
        aval = result_avals[0]
        n_rows = math.prod(aval.shape)
        if name in ("ember.reshape", "ember.broadcast_in_dim") and not strided[0] and \
                n_rows == layout.rows:
            return [kc.wrap_rows(self._same(operands[0]), aval, layout)]
        if name == "ember.broadcast_in_dim" and strided[0] and in_rows[0] and \
                list(attributes["broadcast_dimensions"]) == list(
                    range(len(kc.row_avals[operands[0]].shape))) and \
                aval.shape[-1] == layout.width and \
                math.prod(aval.shape[:-1]) == layout.rows:
            # Back along the rows (the rows' dimensions lead, in order).
            return [kc.rows_to_strided(operands[0], aval, layout)]
        if name in ELEMENTWISE and not any(strided) and \
                all(math.prod(a.shape) == layout.rows for a in result_avals):
            vals = []
            for v, lay in zip(operands, in_rows):
                if lay is None and v not in kc.strided_values:
                    shape = ir.RankedTensorType(v.type).shape
                    if math.prod(shape) == layout.rows:
                        lay, v = layout, kc.take_rows(v, shape, layout)
                if lay != layout:
                    break
                vals.append(v)
            else:
                per = core.ShapedArray((layout.runs,), aval.dtype)
                outs = super().emit(name, vals, [per.update(dtype=a.dtype)
                                                 for a in result_avals], attributes)
                return [kc.wrap_rows(o.value, a, layout) for o, a in zip(outs, result_avals)]
        # Anything else: the rows-layout operands as replicated values.
        plain = [kc.rows_to_replicated(v, kc.row_avals[v], lay).value if lay else v
                 for v, lay in zip(operands, in_rows)]
        return self.emit(name, plain, result_avals, attributes)

    def _emit_wgmma(self, name, operands, result_avals, attributes):
        """Ops on values in wgmma's accumulator layout: elementwise ops keep
        it (other operands are brought into it); anything else sees those
        values as strided arrays (through a staging buffer)."""
        kc = self.kc
        first = next(v for v in operands if v in kc.wgmma_values)
        shape, kind = kc.aval_of(first).shape, kc.wgmma_values[first]
        if name == "ember.reduce" and kind == "wgmma" and \
                list(attributes["dimensions"]) == [1] and \
                kc._kind(attributes["kind"]) in ("sum", "max", "min", "prod") and \
                np.dtype(result_avals[0].dtype).itemsize == 4:
            return [kc.reduce_wgmma_rows(first, shape, result_avals[0], attributes["kind"])]
        out = result_avals[0].shape
        if name == "ember.broadcast_in_dim" and kind == "wgmma_row" and \
                list(attributes["broadcast_dimensions"]) == [0] and \
                len(out) == 2 and out[0] == shape[0] and out[1] % 8 == 0:
            return [kc.broadcast_wgmma_rows(first, result_avals[0])]
        if name == "ember.broadcast_in_dim" and kind == "wgmma_col" and \
                list(attributes["broadcast_dimensions"]) == [1] and \
                len(out) == 2 and out[1] == shape[0] and out[0] % WGMMA_M == 0:
            return [kc.broadcast_wgmma_rows(first, result_avals[0], "wgmma_col")]
        if name in ELEMENTWISE and all(a.shape == shape for a in result_avals):
            vals = [v if kc.wgmma_values.get(v) == kind else
                    kc.to_wgmma(v, kc.aval_of(v), kind) for v in operands]
            frag = [core.ShapedArray((_layout_count(kind, shape),), a.dtype)
                    for a in result_avals]
            outs = super().emit(name, vals, frag, attributes)
            return [kc.wrap_wgmma(o.value, a, kind) for o, a in zip(outs, result_avals)]
        plain = [kc.gather(v, kc.aval_of(v), kc.aval_of(v), lambda i: i).value
                 if v in kc.wgmma_values else v for v in operands]
        return self.emit(name, plain, result_avals, attributes)

    def refuse_region(self):
        """Region ops (`scan`, ...) traced here: the control flow this
        compiler does not build (fori_loop, while_loop, cond and switch
        reach it through hooks)."""
        raise _unsupported("this `lax` control flow (supported: fori_loop, while_loop, "
                           "cond, switch, pl.loop, pl.when)")

    def _same(self, value):
        """A new value equal to `value` (a reshape to its own type), so that
        each value has one logical shape."""
        t = ir.RankedTensorType(value.type)
        aval = core.ShapedArray(tuple(t.shape), _dtype_of(t.element_type))
        return super().emit("ember.reshape", [value], [aval])[0].value

    def _emit_retyped(self, name, operands, result_avals, attributes):
        frag = [_frag_aval(a) for a in result_avals]
        outs = super().emit(name, operands, frag, attributes)
        return [self._wrap(o.value, a) for o, a in zip(outs, result_avals)]

    def _wrap(self, value, aval):
        if _strided(aval):
            self.kc.strided_values.add(value)
            self.kc.logical_types[value] = core.mlir_type(aval)
        return core.Tracer(self, value, aval)

    def to_value(self, x):
        if isinstance(x, core.Tracer) and x._trace is not self:
            raise _unsupported("a value traced outside the kernel (pass it as an operand)")
        return super().to_value(x)


class _KRef(state._RefBase):
    """A GMEM operand or SMEM scratch buffer of the kernel being compiled."""

    def __init__(self, compiler, value, shape, dtype, space, operand=None, swizzled=None):
        self.kc, self.value = compiler, value
        self._shape, self._dtype = tuple(shape), np.dtype(dtype)
        self.space, self.operand = space, operand
        self.swizzled = swizzled  # a _Swizzled layout, or None (row-major)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    def compose(self, idx, what):
        return state._normalize(self.shape, idx, what)

    @property
    def at(self):
        return _KAt(self)

    def __getitem__(self, idx):
        return self.kc.load(self, self.compose(idx, "load"))

    def __setitem__(self, idx, val):
        self.kc.store(self, self.compose(idx, "store"), val)


class _KView(_KRef):
    """`ref.at[idx]` of a kernel buffer."""

    def __init__(self, base, norm):
        self.base, self.norm = base, norm

    @property
    def kc(self):
        return self.base.kc

    @property
    def shape(self):
        return state._view_shape(self.norm)

    @property
    def dtype(self):
        return self.base.dtype

    def compose(self, idx, what):
        return state._compose(self.norm, state._normalize(self.shape, idx, what))

    def __getitem__(self, idx):
        return self.kc.load(self.base, self.compose(idx, "load"))

    def __setitem__(self, idx, val):
        self.kc.store(self.base, self.compose(idx, "store"), val)


class _KTransposed:
    """`plgpu.transpose_ref(ref, (1, 0))` of a matrix in SMEM: an MMA
    operand read K-major (a wgmma's B stored N x K). Nothing else reads
    it yet."""

    def __init__(self, ref, permutation):
        self.ref, self.permutation = ref, tuple(permutation)
        self.shape = tuple(ref.shape[p] for p in self.permutation)
        self.dtype = ref.dtype

    def __getitem__(self, idx):
        raise _unsupported("reading a transpose_ref view (it is a wgmma operand)")

    def __setitem__(self, idx, value):
        raise _unsupported("writing a transpose_ref view (it is a wgmma operand)")


class _KAcc:
    """A wgmma accumulator (`plgpu.ACC`): each thread's part of the f32
    matrix in registers (a private buffer LLVM promotes to registers), in
    wgmma's layout, zero at first."""

    def __init__(self, compiler, shape, dtype):
        _check_acc_shape(shape, "an accumulator")
        if np.dtype(dtype) != np.float32:
            raise _unsupported(f"a {np.dtype(dtype)} accumulator (wgmma accumulates f32)")
        self.kc, self.shape, self.dtype = compiler, tuple(shape), np.dtype(dtype)
        self.count = _wgmma_count(self.shape)
        kc = compiler
        with kc.ctx:
            f32 = ir.F32Type.get()
            self.buf = kc.op("memref.alloca", results=[ir.MemRefType.get([self.count], f32)],
                             attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])})
            zero = kc.op("arith.constant", results=[f32],
                         attrs={"value": ir.FloatAttr.get(f32, 0.0)})
            for i in range(self.count):
                kc.op("memref.store", [zero, self.buf, kc.index(i)])

    def _whole(self, idx, what):
        norm = state._normalize(self.shape, idx, what)
        if any(k != "ds" or s.stride != 1 or not isinstance(s.start, (int, np.integer))
               or s.start != 0 or s.size != n for (k, s), n in zip(norm, self.shape)):
            raise _unsupported(f"{what} of part of a wgmma accumulator (use acc[...])")

    def __getitem__(self, idx):
        self._whole(idx, "load")
        return self.kc.acc_read(self)

    def __setitem__(self, idx, val):
        self._whole(idx, "store")
        self.kc.acc_write(self, val)


class _KTmem:
    """A TMEM scratch buffer, or a window of its columns (`ref.at[:, cols]`):
    32-bit columns of the block's TMEM from column `offset` (an int, or an
    index value), 128 lanes (rows). `collective`: a 2-CTA MMA's buffer,
    allocated by both blocks of the pair at the same address."""

    def __init__(self, compiler, offset, shape, dtype, collective=False):
        self.kc, self.offset = compiler, offset
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.collective = collective

    def address(self, lane=None):
        """The TMEM address (i32: lane << 16 | column) of the buffer's
        first column, at `lane` (an index value) or lane 0."""
        kc = self.kc
        addr = kc.tmem_base
        with kc.ctx:
            i32 = ir.IntegerType.get_signless(32)
            if not isinstance(self.offset, int) or self.offset:
                addr = kc.op("arith.addi", [addr, kc.i32(self.offset)], [i32])
            if lane is not None:
                addr = kc.op("arith.addi", [addr, kc.i32(kc.arith("shli", lane, 16))], [i32])
        return addr

    @property
    def at(self):
        return _KTmemAt(self)

    def __getitem__(self, idx):
        raise _unsupported("reading TMEM with ref[...] (use plgpu.async_load_tmem)")

    def __setitem__(self, idx, val):
        raise _unsupported("writing TMEM with ref[...] (use plgpu.async_store_tmem)")


class _KTmemAt:
    """`tmem_ref.at[:, cols]`: a window of whole lanes and a run of columns
    (static size, any start)."""

    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, idx):
        ref, kc = self.ref, self.ref.kc
        norm = state._normalize(ref.shape, idx, "ref.at")
        (rk, rows), (ck, cols) = norm
        if rk != "ds" or (rows.start, rows.size, rows.stride) != (0, ref.shape[0], 1) or \
                ck != "ds" or cols.stride != 1:
            raise _unsupported("a TMEM window other than whole lanes and a run of columns")
        if ref.dtype.itemsize != 4:
            raise _unsupported(f"a window of {ref.dtype} TMEM (f32)")
        start = cols.start
        if isinstance(start, (int, np.integer)) and isinstance(ref.offset, int):
            offset = ref.offset + int(start)
        else:
            offset = kc.arith("addi", kc.index(ref.offset), kc.index(start))
        return _KTmem(kc, offset, (ref.shape[0], cols.size), ref.dtype, ref.collective)


class AccInit:
    """`plgpu.ACC.init(value)` in a kernel compiled for the GPU: `pl.run_state`
    makes it an accumulator (`_KAcc`) holding `value`."""

    def __init__(self, value):
        self.value = value


class _KAt:
    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, idx):
        base = self.ref.base if isinstance(self.ref, _KView) else self.ref
        return _KView(base, self.ref.compose(idx, "ref.at"))


def _base_norm(ref):
    if isinstance(ref, _KView):
        return ref.base, ref.norm
    if isinstance(ref, _KRef):
        return ref, ref.compose((), "ref")
    raise TypeError(f"expected a kernel buffer, got {type(ref).__name__} (at {core.where()})")


class _KBarrier:
    """Barrier scratch: `num_barriers` mbarriers; `.at[i]` picks one."""

    def __init__(self, kind, value, phases, index=None):
        self.kind, self.value, self.phases, self.index = kind, value, phases, index

    @property
    def at(self):
        outer = self

        class _At:
            def __getitem__(self, i):
                return _KBarrier(outer.kind, outer.value, outer.phases, i)

        return _At()


class KernelCompiler:
    """Builds one kernel: `compile_kernel` below drives it."""

    def __init__(self, name, in_avals, out_avals, scratch, grid, grid_names, cluster,
                 cluster_names, nthreads, thread_name, infer_transforms=False):
        self.name = name
        self.infer_transforms = infer_transforms  # _swizzle_of's `infer`
        self.grid, self.grid_names = tuple(grid), tuple(grid_names)
        self.cluster, self.cluster_names = tuple(cluster), tuple(cluster_names)
        self.nthreads, self.thread_name = nthreads, thread_name
        self.strided_values = set()
        # Values in a tensor-core register layout: value -> "wgmma" (wgmma's
        # accumulator fragment) or "tmem" (a row of a 128-lane TMEM matrix
        # per thread, as tcgen05.ld gives it).
        self.wgmma_values = {}
        self.buffer_kinds = {}  # carry buffer -> the register layout it holds
        self.wgmma_pending = False  # a wgmma issued since the last wgmma_wait(0)
        self.logical_types = {}
        self.rows = {}  # value -> _RowsLayout (see reduce_rows)
        self.row_avals = {}
        # Strided values read from a buffer: value -> (buffer, window, the
        # buffer's write count then); and each buffer's write count.
        self.sources, self.writes = {}, {}
        self.loop_reads = []  # per enclosing loop: the sources read in its body
        self.descriptors = []  # (operand, box shape, dtype)
        self._desc_index = {}
        if len(self.grid) + 0 > 3 or len(self.cluster) > 3:
            raise ValueError(f"plgpu.kernel: at most 3 grid and 3 cluster dimensions "
                             f"(at {core.where()})")
        self._build_skeleton(in_avals, out_avals, scratch)

    # -- the gpu.func ----------------------------------------------------

    def _build_skeleton(self, in_avals, out_avals, scratch):
        def memref(shape, dtype, space=""):
            dims = "".join(f"{d}x" for d in shape)
            return f"memref<{dims}{dtypes.mlir_name(np.dtype(dtype))}{space}>"

        for a in (*in_avals, *out_avals, *[t for t in scratch if hasattr(t, "dtype")]):
            if np.dtype(a.dtype) == np.bool_:
                raise _unsupported("a boolean kernel buffer")
        wg = ", #gpu.address_space<workgroup>"
        args = [memref(a.shape, a.dtype) for a in (*in_avals, *out_avals)]
        attributions, self.scratch_kinds, slots = [], [], []
        for t in scratch:
            # (Recognized by their attributes: mosaic_gpu.py, which defines
            # them, imports this module.)
            slots.append(len(attributions))
            if hasattr(t, "num_arrivals"):  # Barrier, ClusterBarrier
                attributions.append(memref((t.num_barriers,), np.int64, wg))
            elif getattr(getattr(t, "space", None), "name", None) == "SMEM":
                if _swizzle_of(getattr(t, "transforms", ()), t.shape, t.dtype,
                               self.infer_transforms) is not None:
                    # Swizzled: one flat buffer (see _Swizzled).
                    attributions.append(memref((math.prod(t.shape),), t.dtype, wg))
                else:
                    attributions.append(memref(t.shape, t.dtype, wg))
            elif type(t).__name__ == "ACC":  # registers: no shared memory
                slots[-1] = None
            elif type(t).__name__ == "TMEM":  # tensor memory (see _prologue)
                slots[-1] = None
            else:
                raise _unsupported(f"{type(t).__name__} scratch")
            self.scratch_kinds.append(t)
        # TMEM: one allocation for all TMEM scratch buffers (each at its
        # column offset), its address written to a word of SMEM.
        self.tmem_offsets, cols = [], 0
        tmems = [t for t in scratch if type(t).__name__ == "TMEM"]
        for t in tmems:
            self.tmem_offsets.append(cols)
            cols += t.columns()
        # A 2-CTA pair's TMEM: both blocks allocate it together (one
        # allocation for all TMEM buffers, so all of them or none).
        self.tmem_collective = any(t.collective for t in tmems)
        if self.tmem_collective:
            if not all(t.collective for t in tmems):
                raise _unsupported("collective and non-collective TMEM buffers in one kernel")
            if math.prod(self.cluster) != 2:
                raise ValueError(f"plgpu.kernel: a collective TMEM buffer needs a cluster of "
                                 f"2 blocks (a 2-CTA pair), got cluster={self.cluster} "
                                 f"(at {core.where()})")
        self.tmem_columns = max(32, 1 << (cols - 1).bit_length()) if cols else 0
        if self.tmem_columns > 512:
            raise ValueError(f"plgpu.kernel: TMEM scratch of {cols} columns; a block has 512 "
                             f"(at {core.where()})")
        if cols:
            attributions.append(memref((1,), np.int32, wg))
        blocks = [g * c for g, c in zip(self.grid + (1,) * 3, self.cluster + (1,) * 3)][:3]
        self.blocks = blocks
        n = self.name
        params = ", ".join([f"%a{i}: {t}" for i, t in enumerate(args)] + ["%tma: !llvm.ptr"])
        consts = "\n".join(f"    %k{v} = arith.constant {v} : index"
                           for v in sorted({1, WARPGROUP * self.nthreads, *blocks,
                                            *self.cluster}))
        launch = "gpu.launch "
        if self.cluster:
            c = (self.cluster + (1, 1, 1))[:3]
            launch += (f"clusters(%cx, %cy, %cz) in (%scx = %k{c[0]}, %scy = %k{c[1]}, "
                       f"%scz = %k{c[2]}) ")
        launch += (f"blocks(%bx, %by, %bz) in (%sbx = %k{blocks[0]}, %sby = %k{blocks[1]}, "
                   f"%sbz = %k{blocks[2]}) threads(%tx, %ty, %tz) in "
                   f"(%stx = %k{WARPGROUP * self.nthreads}, %sty = %k1, %stz = %k1) "
                   f"dynamic_shared_memory_size %smem module(@{n}) function(@{n})")
        # The last workgroup attribution is the staging area (see `stage`),
        # resized at the end to what the kernel staged.
        launch += " workgroup(" + ", ".join(
            [f"%w{i}: {t}" for i, t in enumerate(attributions)]
            + [f"%stage: {memref((16,), np.int8, wg)}"]) + ")"
        text = (f"module attributes {{gpu.container_module}} {{\n"
                f"  func.func @{n}_host({params}) {{\n{consts}\n"
                f"    %smem = arith.constant 0 : i32\n"
                f"    {launch} {{\n      gpu.terminator\n    }}\n"
                f"    return\n  }}\n}}")
        self.ctx = context()
        with self.ctx:
            self.module = ir.Module.parse(text)
        func = self.module.body.operations[0]
        entry = func.regions[0].blocks[0]
        self.args = [entry.arguments[i] for i in range(len(args))]
        self.tma = entry.arguments[len(args)]
        launch_op = [o for o in entry.operations if o.operation.name == "gpu.launch"][0]
        self.launch_op = launch_op.operation
        self.smem_size = [o for o in entry.operations
                          if o.operation.name == "arith.constant"][-1].operation
        self.dyn_bytes = 0  # staged bytes per warpgroup
        self.shared_bytes = 0  # bytes of the block's shared part of the staging area
        self.stage_align = 128  # of each warpgroup's part
        self.block = launch_op.regions[0].blocks[0]
        self.block.operations[0].erase()  # gpu.terminator, added back at the end
        nidx = len(self.block.arguments) - len(attributions) - 1
        # The workgroup attribution of each scratch buffer (None: an ACC).
        self.workgroup = [None if i is None else self.block.arguments[nidx + i]
                          for i in slots]
        self.tmem_slot = (self.block.arguments[nidx + len(attributions) - 1]
                          if self.tmem_columns else None)
        self.stage_area = self.block.arguments[nidx + len(attributions)]

    @contextlib.contextmanager
    def _at(self, block):
        saved, self.trace.block = self.trace.block, block
        try:
            yield
        finally:
            self.trace.block = saved

    def op(self, name, operands=(), results=(), attrs=None):
        with self.ctx, self.trace.location():
            o = ir.Operation.create(name, results=list(results), operands=list(operands),
                                    attributes=attrs or {},
                                    ip=ir.InsertionPoint(self.trace.block))
        return o.results[0] if len(o.results) == 1 else o

    def index(self, v):
        if isinstance(v, ir.Value):
            return v
        if isinstance(v, (int, np.integer)):
            with self.ctx:
                t = ir.IndexType.get()
                return self.op("arith.constant", results=[t],
                               attrs={"value": ir.IntegerAttr.get(t, int(v))})
        # A traced integer (0-d): each thread holds it.
        x = core.as_value(v)
        if x.ndim != 0 or not dtypes.is_int(x.dtype):
            raise TypeError(f"indices must be integer scalars, got {x.aval.str_short()} "
                            f"(at {core.where()})")
        val = self.trace.to_value(x)
        with self.ctx:
            elem = ir.RankedTensorType(val.type).element_type
            scalar = self.op("tensor.extract", [val], [elem])
            return self.op("arith.index_cast", [scalar], [ir.IndexType.get()])

    def i32(self, v):
        with self.ctx:
            t = ir.IntegerType.get_signless(32)
            if isinstance(v, (int, np.integer)):
                return self.op("arith.constant", results=[t],
                               attrs={"value": ir.IntegerAttr.get(t, int(v))})
            return self.op("arith.index_cast", [v], [t])

    def arith(self, name, a, b):
        return self.op(f"arith.{name}", [self.index(a), self.index(b)], [self.index(a).type])

    def cmp_eq(self, a, b):
        with self.ctx:
            return self.op("arith.cmpi", [self.index(a), self.index(b)],
                           [ir.IntegerType.get_signless(1)],
                           {"predicate": ir.IntegerAttr.get(
                               ir.IntegerType.get_signless(64), 0)})

    @contextlib.contextmanager
    def when(self, cond):
        """Ops emitted inside run where `cond` (i1) holds."""
        with self.ctx, self.trace.location():
            o = ir.Operation.create("scf.if", results=[], operands=[cond], regions=2,
                                    ip=ir.InsertionPoint(self.trace.block))
            block = o.regions[0].blocks.append()
        with self._at(block):
            yield
            self.op("scf.yield")

    def hw_index(self, name, dim):
        with self.ctx:
            return self.op(f"gpu.{name}", results=[ir.IndexType.get()],
                           attrs={"dimension": ir.Attribute.parse(f"#gpu<dim {dim}>")})

    # -- the kernel's coordinates -------------------------------------------

    def _prologue(self):
        with self.ctx:
            # Each warpgroup stages its values in its own part of the
            # staging area: bytes per warpgroup, set at the end.
            self.stage_stride = self.op("arith.constant", results=[ir.IndexType.get()], attrs={
                "value": ir.IntegerAttr.get(ir.IndexType.get(), 0)})
            # The block's shared part (buffers every warpgroup uses: a
            # warp-specialized pipeline's) comes first: its size, set at
            # the end.
            self.shared_size = self.op("arith.constant", results=[ir.IndexType.get()], attrs={
                "value": ir.IntegerAttr.get(ir.IndexType.get(), 0)})
        tid = self.hw_index("thread_id", "x")
        self.lane = self.arith("remui", tid, WARPGROUP)
        self.warpgroup = self.arith("divui", tid, WARPGROUP)
        self.stage_base = self.arith("addi", self.shared_size,
                                     self.arith("muli", self.warpgroup, self.stage_stride))
        self.elected = self.cmp_eq(self.lane, 0)
        self.in_warp = False  # inside pl.core_map(plgpu.WarpMesh)
        self.coords, self.cluster_coords = {}, []
        for d, dim in enumerate("xyz"[:max(len(self.grid), len(self.cluster))]):
            bid = self.hw_index("block_id", dim)
            c = self.cluster[d] if d < len(self.cluster) else 1
            if d < len(self.cluster):
                cc = self.arith("remui", bid, c)
                self.coords[self.cluster_names[d]] = cc
                self.cluster_coords.append(cc)
            if d < len(self.grid):
                self.coords[self.grid_names[d]] = self.arith("divui", bid, c) if c > 1 else bid
        if self.thread_name is not None:
            self.coords[self.thread_name] = self.warpgroup
        # The block's rank in its cluster (x fastest, as %cluster_ctarank).
        rank, stride = self.index(0), 1
        for d, cc in enumerate(self.cluster_coords):
            rank = self.arith("addi", rank, self.arith("muli", cc, stride))
            stride *= self.cluster[d]
        self.rank = rank
        # Barriers: one thread initializes them, then the block (the
        # cluster, whose peers arrive on them) synchronizes.
        with self.when(self.cmp_eq(self.hw_index("thread_id", "x"), 0)):
            for t, w in zip(self.scratch_kinds, self.workgroup):
                if not hasattr(t, "num_arrivals"):
                    continue
                n = t.num_arrivals * self._group_size(getattr(t, "collective_axes", ()))
                for i in range(t.num_barriers):
                    with self.ctx:
                        self.op("ember_gpu.barrier_init", [w, self.index(i)],
                                attrs={"arrivals": ir.IntegerAttr.get(
                                    ir.IntegerType.get_signless(64), n)})
            if self.cluster:
                self.op("ember_gpu.fence_barrier_init")
        if self.tmem_columns:
            # One warp allocates the block's TMEM (and lets other blocks on
            # the SM allocate theirs); the block reads its address after the
            # block-wide barrier.
            with self.when(self._first_warp()):
                with self.ctx:
                    self.op("ember_gpu.tmem_alloc", [self.tmem_slot, self.index(0)], attrs={
                        "columns": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                      self.tmem_columns),
                        **self._collective_attr()})
                self.op("ember_gpu.tmem_relinquish", attrs=self._collective_attr())
            self.op("ember_gpu.tcgen05_fence")
        self._block_sync()
        if self.tmem_columns:
            self.op("ember_gpu.tcgen05_fence", attrs={"after": ir.UnitAttr.get(self.ctx)})
            with self.ctx:
                self.tmem_base = self.op("memref.load", [self.tmem_slot, self.index(0)],
                                         [ir.IntegerType.get_signless(32)])
        if self.cluster:
            self.op("ember_gpu.cluster_arrive")
            self.op("ember_gpu.cluster_wait")

    def _block_sync(self):
        self.op("gpu.barrier")

    def _collective_attr(self):
        """The `collective` unit attribute of TMEM ops when the kernel's
        TMEM belongs to a 2-CTA pair (cta_group::2)."""
        return {"collective": ir.UnitAttr.get(self.ctx)} if self.tmem_collective else {}

    def _first_warp(self):
        with self.ctx:
            return self.op("arith.cmpi", [self.hw_index("thread_id", "x"), self.index(32)],
                           [ir.IntegerType.get_signless(1)],
                           {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 6)})

    def _warpgroup_sync(self):
        """The warpgroup's threads meet (named barrier 1 + warpgroup); inside
        `core_map(WarpMesh)`, the warp's threads."""
        if self.in_warp:
            with self.ctx:
                self.op("nvvm.bar.warp.sync", [self.i32(-1)])
            return
        if self.nthreads == 1:
            self._block_sync()
            return
        with self.ctx:
            bar = self.arith("addi", self.warpgroup, 1)
            self.op("nvvm.barrier", [self.i32(bar), self.i32(WARPGROUP)],
                    attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0])})

    def _group_size(self, axes):
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        for a in axes:
            if a not in self.cluster_names:
                raise ValueError(f"{a!r} is not a cluster axis of the kernel "
                                 f"{self.cluster_names} (at {core.where()})")
        return math.prod(self.cluster[self.cluster_names.index(a)] for a in axes)

    def _group_ranks(self, axes):
        """(ranks of the group's blocks relative to the rank of its first
        block, that first block's rank, this block's index in the group)."""
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        self._group_size(axes)
        strides, s = [], 1
        for c in self.cluster:
            strides.append(s)
            s *= c
        dims = [self.cluster_names.index(a) for a in axes]
        offsets = [0]
        for d in dims:
            offsets = [o + i * strides[d] for o in offsets for i in range(self.cluster[d])]
        first, me, scale = self.rank, self.index(0), 1
        for d in reversed(dims):
            first = self.arith("subi", first, self.arith("muli", self.cluster_coords[d],
                                                         strides[d]))
        for d in reversed(dims):
            me = self.arith("addi", me, self.arith("muli", self.cluster_coords[d], scale))
            scale *= self.cluster[d]
        return offsets, first, me

    # -- values --------------------------------------------------------------

    def scalar_tracer(self, index_value, dtype=np.int32):
        """A 0-d traced value from an `index`."""
        with self.ctx:
            t = core.mlir_type(core.ShapedArray((), dtype))
            elem = t.element_type
            s = self.op("arith.index_cast", [index_value], [elem])
            v = self.op("tensor.from_elements", [s], [t])
        return core.Tracer(self.trace, v, core.ShapedArray((), np.dtype(dtype)))

    def _elements(self, shape):
        """The row-major multi-indices (index values) of this thread's part
        of a strided array of `shape`, in the order of its tensor: runs of
        `v` consecutive elements (`v = gcd(k, 4)`, 16 bytes of f32), run `r`
        of thread `t` starting at element `(r * 128 + t) * v`, so that the
        warpgroup reads and writes whole runs side by side (Mosaic's
        strided fragment layout)."""
        k = math.prod(shape) // WARPGROUP
        v = math.gcd(k, 4)
        lane_first = self.arith("muli", self.lane, v)
        out = []
        for r in range(k // v):
            first = (self.arith("addi", lane_first, r * WARPGROUP * v) if r else lane_first)
            if shape[-1] % v == 0:
                # A run lies in one row: delinearize once.
                base = self._delinearize(first, shape)
                out += [base[:-1] + [self.arith("addi", base[-1], j) if j else base[-1]]
                        for j in range(v)]
            else:
                out += [self._delinearize(self.arith("addi", first, j) if j else first, shape)
                        for j in range(v)]
        return out

    def _delinearize(self, flat, shape):
        idx = [None] * len(shape)
        for d in range(len(shape) - 1, -1, -1):
            if d == 0:
                idx[d] = flat
            else:
                idx[d] = self.arith("remui", flat, shape[d])
                flat = self.arith("divui", flat, shape[d])
        return idx

    def _addresses(self, norm, view_idx):
        """A view's multi-index in its base's coordinates."""
        out, it = [], iter(view_idx)
        for kind, s in norm:
            if kind == "at":
                out.append(self.index(s))
            elif kind == "ds":
                i = self.index(next(it))
                if s.stride != 1:
                    i = self.arith("muli", i, s.stride)
                out.append(self.arith("addi", self.index(s.start), i)
                           if not (isinstance(s.start, int) and s.start == 0) else i)
            else:
                raise _unsupported("indexing a kernel buffer with an integer array")
        return out

    def _locate(self, base, norm, view_idx):
        """The memref indices of a view's element in `base`'s buffer: its
        multi-index, or for a swizzled buffer (`_Swizzled`) the element's
        place in the flat buffer."""
        addr = self._addresses(norm, view_idx)
        sw = base.swizzled
        if sw is None:
            return addr
        lead = self.index(0)
        for x, n in zip(addr[:-2], base.shape[:-2]):
            lead = self.arith("addi", self.arith("muli", lead, n), x)
        e = self._matrix_offset(sw, self.arith("muli", lead, sw.rows * sw.width),
                                addr[-2], addr[-1])
        # sw.swizzle_element, on index values: the row's bits (byte bit 7
        # on) pick which 16-byte chunk an element's chunk trades places with.
        shift = int(math.log2(sw.itemsize))
        mask = sw.swizzle // 16 - 1
        x = self.arith("andi", self.arith("shrui", e, 7 - shift), mask)
        return [self.arith("xori", e, self.arith("shli", x, 4 - shift))]

    def _bounds(self, base, addr):
        """For a bounds-checked buffer (`masked`: a pallas_call operand
        whose last blocks overhang it), whether the element at `addr` is
        inside it (i1) and `addr` clamped inside; else (None, addr)."""
        if not getattr(base, "masked", False):
            return None, addr
        with self.ctx:
            i1 = ir.IntegerType.get_signless(1)
            ok = None
            for a, n in zip(addr, base.shape):
                lt = self.op("arith.cmpi", [a, self.index(n)], [i1], {
                    "predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 6)})
                ok = lt if ok is None else self.op("arith.andi", [ok, lt], [i1])
            zero = self.index(0)
            safe = [self.op("arith.select", [ok, a, zero], [a.type]) for a in addr]
        return ok, safe

    def _read(self, base, norm, idx, elem):
        """Element `idx` of view `norm` of `base`; outside a bounds-checked
        buffer, what JAX's interpreter reads there (NaN, the smallest
        integer)."""
        ok, addr = self._bounds(base, self._locate(base, norm, idx))
        with self.ctx:
            x = self.op("memref.load", [base.value, *addr], [elem])
            if ok is None:
                return x
            dt = base.dtype
            fill = (float("nan") if dtypes.is_inexact(dt) else
                    int(np.iinfo(dt).min) if dtypes.is_int(dt) else 0)
            attr = (ir.FloatAttr.get(elem, fill) if dtypes.is_inexact(dt)
                    else ir.IntegerAttr.get(elem, fill))
            c = self.op("arith.constant", results=[elem], attrs={"value": attr})
            return self.op("arith.select", [ok, x, c], [elem])

    def _write(self, base, norm, idx, x):
        """Stores `x` at element `idx` of view `norm` of `base`; outside a
        bounds-checked buffer, nothing (an overhanging block's overhang is
        dropped)."""
        ok, addr = self._bounds(base, self._locate(base, norm, idx))
        if ok is None:
            self.op("memref.store", [x, base.value, *addr])
            return
        with self.when(ok):
            self.op("memref.store", [x, base.value, *addr])

    # gpu.all_reduce's combiner for each ember.reduce kind (floats, signed
    # integers); max and min propagate NaNs, as JAX's do.
    _ALL_REDUCE = {"sum": ("add", "add"), "prod": ("mul", "mul"),
                   "max": ("maximumf", "maxsi"), "min": ("minimumf", "minsi"),
                   "and": (None, "and"), "or": (None, "or"), "xor": (None, "xor")}

    def reduce_all(self, part, aval, kind_attr):
        """A whole strided array reduced to a scalar (replicated): each
        thread reduces its part, then the warpgroup's threads combine theirs
        (`gpu.all_reduce`: shuffles within warps, shared memory across)."""
        if self.nthreads != 1:
            raise _unsupported("a reduction of an array spread over the threads, in a kernel "
                               "of several warpgroups")
        kind = self._kind(kind_attr)
        is_float = dtypes.is_float(aval.dtype)
        op = self._ALL_REDUCE.get(kind, (None, None))[0 if is_float else 1]
        if op is None or not (is_float or dtypes.is_int(aval.dtype)) or \
                dtypes.is_unsigned(aval.dtype) and kind in ("max", "min"):
            raise _unsupported(f"a {kind} reduction of {aval.dtype} values across the threads")
        with self.ctx:
            t0 = core.mlir_type(aval)
            k = ir.RankedTensorType(part.type).shape[0]
            combine = self._COMBINE[kind][0 if is_float else 1]
            scalar = self._combine_part(part, t0.element_type, combine, range(k))
            o = ir.Operation.create(
                "gpu.all_reduce", results=[scalar.type], operands=[scalar], regions=1,
                attributes={"op": ir.Attribute.parse(f"#gpu<all_reduce_op {op}>"),
                            "uniform": ir.UnitAttr.get()},
                loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block))
            # (The region stays empty: the combiner is `op`.)
            v = self.op("tensor.from_elements", [o.results[0]], [t0])
        return core.Tracer(self.trace, v, aval)

    # The arith op combining two values of each reduction kind.
    _COMBINE = {"sum": ("addf", "addi"), "prod": ("mulf", "muli"),
                "max": ("maximumf", "maxsi"), "min": ("minimumf", "minsi"),
                "and": (None, "andi"), "or": (None, "ori"), "xor": (None, "xori")}

    @staticmethod
    def _kind(kind_attr):
        return str(kind_attr).removeprefix("#ember<reduce ").removesuffix(">").strip()

    def rows_reducible(self, shape, aval, kind_attr):
        """Whether `reduce_rows` applies (else `reduce_by_reads`)."""
        n, width = math.prod(shape), shape[-1]
        v = math.gcd(n // WARPGROUP, 4)
        group = width // v
        kind = self._kind(kind_attr)
        return (not width % v and group <= 32 and not group & (group - 1)
                and kind in ("sum", "prod", "max", "min")
                and np.dtype(aval.dtype).itemsize == 4 and not dtypes.is_unsigned(aval.dtype))

    def clamp(self, x, lo, hi):
        """`x` (index) clamped to [lo, hi] (signed)."""
        x = self.op("arith.maxsi", [x, self.index(lo)], [x.type])
        return self.op("arith.minsi", [x, self.index(max(hi, lo))], [x.type])

    def _outputs(self, aval):
        """The result elements this thread computes: its part of a strided
        result, every element of a replicated one."""
        if _strided(aval):
            return self._elements(aval.shape)
        _check_replicated(aval)
        return [[self.index(i) for i in idx] for idx in np.ndindex(*aval.shape)]

    def _finish(self, scalars, aval):
        """A traced value of `aval` from this thread's result elements."""
        with self.ctx:
            if _strided(aval):
                v = self.op("tensor.from_elements", scalars,
                            [core.mlir_type(_frag_aval(aval))])
                return self.trace._wrap(v, aval)
            v = self.op("tensor.from_elements", scalars, [core.mlir_type(aval)])
            return core.Tracer(self.trace, v, aval)

    def read_view(self, value, in_aval, aval, index_fn):
        """A slice: each thread reads its result elements (`index_fn` maps
        a result index to the operand's) from the buffer holding `value`."""
        return self._finish([self.read_scalar(value, in_aval, index_fn(idx))
                             for idx in self._outputs(aval)], aval)

    def reduce_by_reads(self, value, in_aval, aval, dims, kind_attr):
        """Any reduction of a strided array: each thread computes its result
        elements, looping (`scf.for`) over the reduced elements and reading
        them from the buffer holding `value`."""
        kind = self._kind(kind_attr)
        is_float = dtypes.is_float(aval.dtype)
        op = self._COMBINE.get(kind, (None, None))[0 if is_float else 1]
        if op is None or dtypes.is_unsigned(aval.dtype) and kind in ("max", "min"):
            raise _unsupported(f"a {kind} reduction of {aval.dtype} values")
        if value in self.strided_values:
            self._source(value, in_aval)  # staged before the loop
        kept = [d for d in range(len(in_aval.shape)) if d not in dims]
        sizes = [in_aval.shape[d] for d in dims]
        outs = self._outputs(aval)
        with self.ctx:
            t = core.mlir_type(aval).element_type
            ident = {"sum": 0, "prod": 1, "or": 0, "xor": 0, "and": -1}.get(kind)
            if ident is None:  # max, min
                big = (float("inf") if is_float else
                       np.iinfo(np.dtype(aval.dtype)).max)
                ident = -big if kind == "max" else big
            init_attr = (ir.FloatAttr.get(t, float(ident)) if is_float
                         else ir.IntegerAttr.get(t, int(ident)))
            init = self.op("arith.constant", results=[t], attrs={"value": init_attr})
            loop = ir.Operation.create(
                "scf.for", results=[t] * len(outs),
                operands=[self.index(0), self.index(math.prod(sizes)), self.index(1)]
                + [init] * len(outs),
                regions=1, loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block))
            block = loop.regions[0].blocks.append(ir.IndexType.get(), *([t] * len(outs)))
        with self._at(block), self.ctx:
            red = self._delinearize(block.arguments[0], sizes) if sizes else []
            new = []
            for e, out in enumerate(outs):
                idx = [None] * len(in_aval.shape)
                for d, i in zip(kept, out):
                    idx[d] = i
                for d, i in zip(dims, red):
                    idx[d] = i
                x = self.read_scalar(value, in_aval, idx)
                new.append(self.op(f"arith.{op}", [block.arguments[1 + e], x], [t]))
            self.op("scf.yield", new)
        return self._finish([loop.results[e] for e in range(len(outs))], aval)

    def concatenate(self, operands, dim, aval):
        """Each result element read from the operand whose range along
        `dim` holds it (every operand read at a clamped index, then a
        select)."""
        avals = [self.aval_of(v) for v in operands]
        for v, a in zip(operands, avals):
            if v in self.strided_values:
                self._source(v, a)  # staged once, before the reads
        outs = []
        with self.ctx:
            i1 = ir.IntegerType.get_signless(1)
            slt = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)  # slt
            for idx in self._outputs(aval):
                x, offset = None, 0
                for v, a in zip(operands, avals):
                    n = a.shape[dim]
                    local = self.clamp(self.arith("subi", idx[dim], offset), 0, n - 1)
                    y = self.read_scalar(v, a, idx[:dim] + [local] + idx[dim + 1:])
                    if x is None:
                        x = y
                    else:
                        before = self.op("arith.cmpi", [idx[dim], self.index(offset)], [i1],
                                         {"predicate": slt})
                        x = self.op("arith.select", [before, x, y], [x.type])
                    offset += n
                outs.append(x)
        return self._finish(outs, aval)

    def cumulative(self, value, in_aval, aval, axis, kind_attr, reverse):
        """An inclusive scan along `axis`: each result element loops over
        the elements before it (after it, reversed), read through the
        source."""
        kind = self._kind(kind_attr)
        is_float = dtypes.is_float(aval.dtype)
        op = self._COMBINE.get(kind, (None, None))[0 if is_float else 1]
        if op is None:
            raise _unsupported(f"a cumulative {kind} of {aval.dtype} values")
        self._source(value, in_aval)
        n = in_aval.shape[axis]
        outs = []
        with self.ctx:
            t = core.mlir_type(aval).element_type
            for idx in self._outputs(aval):
                first = self.read_scalar(value, in_aval, idx)
                lo = self.arith("addi", idx[axis], 1) if reverse else self.index(0)
                hi = self.index(n) if reverse else idx[axis]
                loop = ir.Operation.create(
                    "scf.for", results=[t], operands=[lo, hi, self.index(1), first], regions=1,
                    loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block))
                block = loop.regions[0].blocks.append(ir.IndexType.get(), t)
                with self._at(block):
                    y = self.read_scalar(value, in_aval, idx[:axis] + [block.arguments[0]]
                                         + idx[axis + 1:])
                    self.op("scf.yield", [self.op(f"arith.{op}", [block.arguments[1], y], [t])])
                outs.append(loop.results[0])
        return self._finish(outs, aval)

    def reduce_rows(self, part, shape, aval, kind_attr):
        """A strided array reduced along its last axis. Each run of a
        thread's part lies in one row (when the row length C is a multiple
        of the run length v) and a row's runs are held by C/v consecutive
        threads of a warp: each thread reduces its runs, then a butterfly of
        `gpu.shuffle xor` within groups of C/v lanes gives every thread its
        runs' row totals. The result is in the *rows* layout: per thread,
        one value per run (its row's), which elementwise ops keep and a
        broadcast back along the rows spreads over the run."""
        # (Only when `rows_reducible` holds.)
        n, width = math.prod(shape), shape[-1]
        k = n // WARPGROUP
        v = math.gcd(k, 4)
        group = width // v
        op = self._COMBINE[self._kind(kind_attr)][0 if dtypes.is_float(aval.dtype) else 1]
        runs = k // v
        lay = _RowsLayout(width, v, runs, n // width)
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            totals = []
            for r in range(runs):
                x = self._combine_part(part, elem, op, range(r * v, (r + 1) * v))
                totals.append(self._butterfly(x, elem, op, group))
            t = self.op("tensor.from_elements", totals,
                        [core.mlir_type(core.ShapedArray((runs,), aval.dtype))])
        return self.wrap_rows(t, aval, lay)

    def _butterfly(self, x, elem, op, group):
        """`op` of `x` over each group of `group` consecutive lanes of a
        warp (a power of two), every lane getting the result: `gpu.shuffle
        xor` by group/2, ..., 1."""
        off = group // 2
        while off:
            o = ir.Operation.create(
                "gpu.shuffle", results=[elem, ir.IntegerType.get_signless(1)],
                operands=[x, self.i32(off), self.i32(32)],
                attributes={"mode": ir.Attribute.parse("#gpu<shuffle_mode xor>")},
                loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block))
            x = self.op(f"arith.{op}", [x, o.results[0]], [elem])
            off //= 2
        return x

    def _combine_part(self, part, elem, op, indices):
        """`op` (an arith op) over elements `indices` of a thread's part,
        as scalar ops (a loop here would keep the part out of registers)."""
        x = None
        for i in indices:
            y = self.op("tensor.extract", [part, self.index(i)], [elem])
            x = y if x is None else self.op(f"arith.{op}", [x, y], [elem])
        return x

    def aval_of(self, value):
        """The logical aval of a value traced in the kernel."""
        if value in self.strided_values or value in self.wgmma_values:
            t = ir.RankedTensorType(self.logical_types[value])
        elif value in self.rows:
            return self.row_avals[value]
        else:
            t = ir.RankedTensorType(value.type)
        return core.ShapedArray(tuple(t.shape), _dtype_of(t.element_type))

    def plain(self, tracer):
        """A tracer whose value is strided or replicated (a rows-layout
        value becomes replicated)."""
        v = tracer.value if isinstance(tracer, core.Tracer) else None
        if v is not None and v in self.rows:
            return self.rows_to_replicated(v, tracer.aval, self.rows[v])
        return tracer

    def wrap_rows(self, value, aval, layout):
        self.rows[value] = layout
        self.row_avals[value] = aval
        return core.Tracer(self.trace, value, aval)

    def rows_to_strided(self, value, aval, layout):
        """A rows-layout value broadcast along the rows: each run's value
        over its `v` elements."""
        per = core.ShapedArray((layout.runs, layout.v), aval.dtype)
        with self.ctx:
            b = core.Trace.emit(self.trace, "ember.broadcast_in_dim", [value], [per], {
                "broadcast_dimensions": ir.DenseI64ArrayAttr.get([0])})[0].value
            flat = core.Trace.emit(self.trace, "ember.reshape", [b],
                                   [_frag_aval(aval)])[0].value
        return self.trace._wrap(flat, aval)

    def take_rows(self, value, shape, layout):
        """A replicated value of one element per row (shape (R,) or (R, 1)...)
        in the rows layout: run r of thread t takes row ((r*128 + t)*v) // C."""
        with self.ctx:
            t = ir.RankedTensorType(value.type)
            out_t = ir.RankedTensorType.get([layout.runs], t.element_type)
            owner = value.owner
            if isinstance(owner, ir.Operation) or hasattr(owner, "operation"):
                owner = owner.operation
                if owner.name == "ember.broadcast_in_dim" and \
                        ir.RankedTensorType(owner.operands[0].type).rank == 0:
                    # A scalar broadcast: the same value for every row.
                    return self.op("ember.broadcast_in_dim", [owner.operands[0]], [out_t], {
                        "broadcast_dimensions": ir.DenseI64ArrayAttr.get([])})
            scalars = []
            for r in range(layout.runs):
                first = self.arith("muli", self.arith("addi", self.lane, r * WARPGROUP), layout.v)
                row = self.arith("divui", first, layout.width)
                idx = self._delinearize(row, list(shape)) if shape else []
                scalars.append(self.op("tensor.extract", [value, *idx], [t.element_type]))
            return self.op("tensor.from_elements", scalars, [out_t])

    def pick(self, value, aval, index_fn):
        """A strided array whose element `i` is element `index_fn(i)` of
        the replicated `value`."""
        with self.ctx:
            elem = ir.RankedTensorType(value.type).element_type
            xs = [self.op("tensor.extract", [value, *index_fn(idx)], [elem])
                  for idx in self._elements(aval.shape)]
            v = self.op("tensor.from_elements", xs, [core.mlir_type(_frag_aval(aval))])
        return self.trace._wrap(v, aval)

    def iota(self, aval, dimension, kind=None):
        """`lax.iota`/`broadcasted_iota` as a strided array (or, with `kind`,
        in that register layout: `plgpu.broadcasted_iota(..., layout=)`):
        each element's index along `dimension`."""
        if kind == "wgmma":
            _check_acc_shape(aval.shape, "an iota in wgmma's layout")
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            xs = []
            elements = (self._elements(aval.shape) if kind is None else
                        self._layout_elements(kind, aval.shape))
            for idx in elements:
                i = idx[dimension]
                if dtypes.is_float(aval.dtype):
                    i64 = self.op("arith.index_cast", [i], [ir.IntegerType.get_signless(64)])
                    xs.append(self.op("arith.sitofp", [i64], [elem]))
                else:
                    xs.append(self.op("arith.index_cast", [i], [elem]))
            if kind is not None:
                v = self.op("tensor.from_elements", xs, [core.mlir_type(
                    core.ShapedArray((len(xs),), aval.dtype))])
                return self.wrap_wgmma(v, aval, kind)
            v = self.op("tensor.from_elements", xs, [core.mlir_type(_frag_aval(aval))])
        return self.trace._wrap(v, aval)

    def take_part(self, tracer):
        """This thread's part of a replicated array (as a strided value)."""
        aval = tracer.aval
        src = tracer.value
        with self.ctx:
            elem = ir.RankedTensorType(src.type).element_type
            scalars = [self.op("tensor.extract", [src, *idx], [elem])
                       for idx in self._elements(aval.shape)]
            v = self.op("tensor.from_elements", scalars, [core.mlir_type(_frag_aval(aval))])
        return self.trace._wrap(v, aval)

    # -- wgmma's accumulator layout ----------------------------------------

    def _wgmma_elements(self, shape):
        """The (row, column) index values of this thread's elements of a
        (64 m) x N matrix in wgmma's accumulator layout, in register order
        (m-tile by m-tile)."""
        warp = self.arith("divui", self.lane, 32)
        lane = self.arith("remui", self.lane, 32)
        row0 = self.arith("addi", self.arith("muli", warp, 16), self.arith("divui", lane, 4))
        col0 = self.arith("muli", self.arith("remui", lane, 4), 2)
        out = []
        for mt in range(shape[0] // WGMMA_M):
            for r in range(shape[1] // 2):
                j, i, c = r // 4, (r // 2) % 2, r % 2
                row = self.arith("addi", row0, WGMMA_M * mt + 8 * i)
                col = self.arith("addi", col0, 8 * j + c)
                out.append([row, col])
        return out

    def _tmem_elements(self, shape):
        """This thread's elements of a 128 x N matrix read from TMEM: row
        (lane) t, every column."""
        return [[self.lane, self.index(j)] for j in range(shape[1])]

    def _layout_elements(self, kind, shape):
        if kind == "wgmma":
            return self._wgmma_elements(shape)
        if kind == "wgmma_row":
            return self._wgmma_row_elements(shape)
        if kind == "wgmma_col":
            return self._wgmma_col_elements(shape)
        return self._tmem_elements(shape)

    def _wgmma_col_elements(self, shape):
        """This thread's elements of an (8 n)-vector in the layout of a wgmma
        accumulator's columns (`Layout.WGMMA_COL`, `WGMMA.reduce(0)`): the
        columns whose elements it holds, in register order."""
        lane = self.arith("remui", self.lane, 32)
        col0 = self.arith("muli", self.arith("remui", lane, 4), 2)
        return [[self.arith("addi", col0, 8 * j + c)]
                for j in range(shape[0] // 8) for c in range(2)]

    def _wgmma_row_elements(self, shape):
        """This thread's elements of an (64 m)-vector in the layout of a
        reduction of a wgmma accumulator along its rows (`Layout.WGMMA_ROW`):
        the two rows of each 64-row tile whose elements it holds."""
        warp = self.arith("divui", self.lane, 32)
        lane = self.arith("remui", self.lane, 32)
        row0 = self.arith("addi", self.arith("muli", warp, 16), self.arith("divui", lane, 4))
        return [[self.arith("addi", row0, WGMMA_M * mt + 8 * i)]
                for mt in range(shape[0] // WGMMA_M) for i in range(2)]

    def reduce_wgmma_rows(self, value, shape, aval, kind_attr):
        """A wgmma-layout (64 m) x N value reduced along its rows: each
        thread combines its elements of its two rows per tile, then the
        four threads of a quad (which hold a row between them) exchange
        partial results by `gpu.shuffle xor` 1 and 2. The result is in the
        WGMMA_ROW layout."""
        op = self._COMBINE[self._kind(kind_attr)][0 if dtypes.is_float(aval.dtype) else 1]
        half = shape[1] // 2
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            totals = []
            for mt in range(shape[0] // WGMMA_M):
                for i in range(2):
                    x = self._combine_part(value, elem, op, [
                        mt * half + r for r in range(half) if (r // 2) % 2 == i])
                    totals.append(self._butterfly(x, elem, op, 4))
            t = self.op("tensor.from_elements", totals, [core.mlir_type(
                core.ShapedArray((len(totals),), aval.dtype))])
        return self.wrap_wgmma(t, aval, "wgmma_row")

    def broadcast_wgmma_rows(self, value, aval, kind="wgmma_row"):
        """A WGMMA_ROW value broadcast along the rows of a (64 m) x N matrix
        (or a WGMMA_COL value along its columns), in wgmma's layout: each
        element takes its row's (column's) value."""
        half = aval.shape[1] // 2
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            n = _layout_count(kind, aval.shape[:1] if kind == "wgmma_row" else aval.shape[1:])
            parts = [self.op("tensor.extract", [value, self.index(k)], [elem])
                     for k in range(n)]
            # Element r of a tile: row group (r // 2) % 2, column 8 (r // 4) + r % 2.
            xs = [parts[mt * 2 + (r // 2) % 2] if kind == "wgmma_row" else
                  parts[(r // 4) * 2 + r % 2]
                  for mt in range(aval.shape[0] // WGMMA_M) for r in range(half)]
            t = self.op("tensor.from_elements", xs, [core.mlir_type(
                core.ShapedArray((len(xs),), aval.dtype))])
        return self.wrap_wgmma(t, aval, "wgmma")

    def _value_elements(self, value, shape):
        """The multi-indices of this thread's elements of a per-thread
        value, in the order of its tensor."""
        if value in self.wgmma_values:
            return self._layout_elements(self.wgmma_values[value], shape)
        return self._elements(shape)

    def wrap_wgmma(self, value, aval, kind="wgmma"):
        self.wgmma_values[value] = kind
        self.logical_types[value] = core.mlir_type(aval)
        return core.Tracer(self.trace, value, aval)

    def to_wgmma(self, value, aval, kind="wgmma"):
        """A value (strided, replicated or in the other register layout) in
        the register layout `kind`: a broadcast scalar is broadcast again;
        anything else is read element by element from where it is held."""
        if kind == "wgmma":
            _check_acc_shape(aval.shape, "an array in wgmma's layout")
        elif kind == "wgmma_row":
            if len(aval.shape) != 1 or aval.shape[0] % WGMMA_M:
                raise _unsupported(f"an array of shape {aval.shape} in the layout of a wgmma "
                                   f"accumulator's rows ((64 m) values)")
        elif kind == "wgmma_col":
            if len(aval.shape) != 1 or aval.shape[0] % 8:
                raise _unsupported(f"an array of shape {aval.shape} in the layout of a wgmma "
                                   f"accumulator's columns ((8 n) values)")
        else:
            _check_tmem_shape(aval.shape, "an array in TMEM's layout")
        count = _layout_count(kind, aval.shape)
        with self.ctx:
            frag_t = core.mlir_type(core.ShapedArray((count,), aval.dtype))
            owner = value.owner
            owner = getattr(owner, "operation", owner)
            if isinstance(owner, ir.Operation) and owner.name == "ember.broadcast_in_dim" \
                    and ir.RankedTensorType(owner.operands[0].type).rank == 0:
                return self.op("ember.broadcast_in_dim", [owner.operands[0]], [frag_t], {
                    "broadcast_dimensions": ir.DenseI64ArrayAttr.get([])})
            xs = [self.read_scalar(value, aval, idx)
                  for idx in self._layout_elements(kind, aval.shape)]
            return self.op("tensor.from_elements", xs, [frag_t])

    def to_wgmma_tracer(self, x, kind="wgmma"):
        """`plgpu.layout_cast(x, Layout.WGMMA)` (or `Layout.WGMMA_ROW`)."""
        v = self.trace.to_value(self.plain(x))
        if self.wgmma_values.get(v) == kind:
            return x
        if v in self.wgmma_values:  # from the other layout, through a plain value
            v = self.trace.to_value(self.gather(v, x.aval, x.aval, lambda i: i))
        return self.wrap_wgmma(self.to_wgmma(v, x.aval, kind), x.aval, kind)

    def transpose_ref(self, ref, permutation):
        """`plgpu.transpose_ref`: a K-major wgmma operand (B stored N x K)."""
        if tuple(permutation) != (1, 0) or len(ref.shape) != 2:
            raise _unsupported(f"transpose_ref{tuple(permutation)} of a {tuple(ref.shape)} "
                               f"ref (a matrix transposed as a wgmma operand)")
        return _KTransposed(ref, permutation)

    def acc_read(self, acc, wait_n=0):
        """`acc[...]`: the accumulator's value, in wgmma's layout. As in
        JAX, reading it completes the wgmmas in flight (all but `wait_n`
        of them; None: no wait, `wgmma_accumulator_load`)."""
        if self.wgmma_pending and wait_n is not None:
            self.wgmma_wait(wait_n)
        aval = core.ShapedArray(acc.shape, acc.dtype)
        with self.ctx:
            f32 = ir.F32Type.get()
            xs = [self.op("memref.load", [acc.buf, self.index(i)], [f32])
                  for i in range(acc.count)]
            v = self.op("tensor.from_elements", xs, [core.mlir_type(
                core.ShapedArray((acc.count,), acc.dtype))])
        return self.wrap_wgmma(v, aval)

    def _in_layout(self, val, shape, dtype, kind):
        """`val` (anything jnp takes) as a per-thread value of `shape` and
        `dtype` in the register layout `kind`."""
        x = self.plain(core.as_value(val))
        if x.dtype != dtype:
            x = x.astype(dtype)
        if x.shape != tuple(shape):
            from ..numpy import lax_numpy as jnp

            x = jnp.broadcast_to(x, shape)
        v = self.trace.to_value(x)
        if self.wgmma_values.get(v) != kind:
            v = self.to_wgmma(v, core.ShapedArray(tuple(shape), np.dtype(dtype)), kind)
        return v

    def acc_write(self, acc, val):
        """`acc[...] = val`."""
        v = self._in_layout(val, acc.shape, acc.dtype, "wgmma")
        with self.ctx:
            f32 = ir.F32Type.get()
            for i in range(acc.count):
                e = self.op("tensor.extract", [v, self.index(i)], [f32])
                self.op("memref.store", [e, acc.buf, self.index(i)])

    def _matrix_window(self, ref, what):
        """(buffer, its _Swizzled layout, the offset (elements) of the
        matrix a view picks, its first row and column, rows, columns) of a
        view of a swizzled SMEM buffer: leading dimensions picked by
        indices, the last two by static windows."""
        if not isinstance(ref, (_KRef, _KView)):
            raise _unsupported(f"{what} of an operand in registers (it reads SMEM refs)")
        base, norm = _base_norm(ref)
        if base.space != "SMEM" or base.swizzled is None:
            raise _unsupported(
                f"{what} of an SMEM buffer without a swizzle: give it transforms="
                f"(plgpu.TilingTransform((8, {128 // base.dtype.itemsize})), "
                f"plgpu.SwizzleTransform(128)) (the layout the tensor cores and TMA share)")
        lead = self.index(0)
        nlead = len(base.shape) - 2
        for d in range(nlead):
            k, sl = norm[d]
            if k == "at":
                i = self.index(sl)
            elif k == "ds" and sl.size == 1:
                i = self.index(sl.start)
            else:
                raise _unsupported(f"{what} of a window spanning several matrices of a "
                                   f"swizzled SMEM buffer")
            lead = self.arith("addi", self.arith("muli", lead, base.shape[d]), i)
        trailing = []
        for k, sl in norm[nlead:]:
            if k != "ds" or sl.stride != 1:
                raise _unsupported(f"{what} of a swizzled SMEM matrix through an index or a "
                                   f"stride in its last two dimensions")
            # A dynamic start (b_smem.at[:, pl.ds(wg * n, n)]) is taken to
            # be on the tensor cores' tiles, as a static one is checked to be.
            start = (int(sl.start) if isinstance(sl.start, (int, np.integer))
                     else self.index(sl.start))
            trailing.append((start, int(sl.size)))
        (r0, rows), (c0, cols) = trailing
        sw = base.swizzled
        lead = self.arith("muli", lead, sw.rows * sw.width)
        return base, sw, lead, r0, c0, rows, cols

    def _matrix_offset(self, sw, lead, r, c):
        """The offset (elements) of element (r, c) (on a 16-byte chunk's
        start) of a swizzled matrix at `lead`, before swizzling; `r` and
        `c` are ints, or index values plus ints (a dynamic window start
        plus a tile's offset in it)."""
        if all(isinstance(x, int) for x in (r, c)):
            return self.arith("addi", lead, sw.offset(r, c))
        r, c = [self.index(x) if isinstance(x, int) else
                self.arith("addi", x[0], x[1]) if isinstance(x, tuple) else x for x in (r, c)]
        strip = self.arith("muli", self.arith("divui", c, sw.cols), sw.strip_elems())
        inner = self.arith("addi", self.arith("muli", r, sw.cols),
                           self.arith("remui", c, sw.cols))
        return self.arith("addi", lead, self.arith("addi", strip, inner))

    def _wgmma_descriptor(self, base, offset, swizzle, leading, stride, tcgen05=False):
        with self.ctx:
            i64 = ir.IntegerType.get_signless(64)
            attrs = {"swizzle": ir.IntegerAttr.get(i64, swizzle),
                     "leading_byte_offset": ir.IntegerAttr.get(i64, leading),
                     "stride_byte_offset": ir.IntegerAttr.get(i64, stride)}
            if tcgen05:
                attrs["tcgen05"] = ir.UnitAttr.get()
            return self.op("ember_gpu.wgmma_descriptor", [base.value, offset], [i64], attrs)

    def wgmma(self, acc, a, b):
        """`plgpu.wgmma(acc, a, b)`: acc += a @ b on the tensor cores, for
        each 64-row tile of `acc` and each 16-deep slice of the contraction
        (and each 256-column part of B): `a` (M x K) K-major in swizzled SMEM
        or an array in registers, `b` (K x N) N-major in swizzled SMEM;
        asynchronous until `wgmma_wait`."""
        what = "wgmma"
        if not isinstance(acc, _KAcc):
            raise _unsupported(f"{what} into anything but a plgpu.ACC accumulator")
        m, n = acc.shape
        # B K-major (stored N x K, given as transpose_ref(b, (1, 0))) or
        # N-major (stored K x N).
        b_kmajor = isinstance(b, _KTransposed)
        if b_kmajor:
            b = b.ref
        if isinstance(a, (_KRef, _KView)):
            (abase, asw, alead, ar0, ac0), bwin, k = self._mma_operands(a, b, m, n, what,
                                                                        b_kmajor)
            dtype = abase.dtype

            def a_operand(mt, kk):
                # A, K-major: 8-row groups 8 x swizzle bytes apart.
                return self._wgmma_descriptor(
                    abase, self._matrix_offset(asw, alead, _plus(ar0, WGMMA_M * mt),
                                               _plus(ac0, kk)),
                    asw.swizzle, *asw.k_major_offsets())
        else:
            bwin, k, dtype, a_operand = self._register_a(a, b, m, n, what, b_kmajor)
        bbase, bsw, blead, br0, bc0 = bwin
        elem = _wgmma_element(dtype)
        kstep = _wgmma_k(dtype)
        # N in parts of at most 256 columns, each a whole number of strips
        # (of 8-row groups when B is K-major).
        unit = 8 if b_kmajor else bsw.cols
        part = n if n <= WGMMA_MAX_N else max(
            w for w in range(unit, WGMMA_MAX_N + 1, unit) if n % w == 0)
        self.op("ember_gpu.wgmma_fence")
        with self.ctx:
            f32 = ir.F32Type.get()
            i64 = ir.IntegerType.get_signless(64)
            for mt in range(m // WGMMA_M):
                operands = [a_operand(mt, kk) for kk in range(0, k, kstep)]
                for n0 in range(0, n, part):
                    vec_t = ir.VectorType.get([part // 2], f32)
                    off = self.index(mt * (n // 2) + n0 // 2)
                    d = self.op("vector.load", [acc.buf, off], [vec_t])
                    for kk, da in zip(range(0, k, kstep), operands):
                        attrs = {"n": ir.IntegerAttr.get(i64, part),
                                 "element_type": ir.TypeAttr.get(elem)}
                        if b_kmajor:
                            # B, K-major (as A): 8-row groups along N
                            # 8 x swizzle bytes apart.
                            db = self._wgmma_descriptor(
                                bbase, self._matrix_offset(bsw, blead, _plus(br0, n0),
                                                           _plus(bc0, kk)),
                                bsw.swizzle, *bsw.k_major_offsets())
                        else:
                            # B, N-major: strips (atoms along N) a strip
                            # apart, 8-row groups 8 x swizzle bytes apart.
                            db = self._wgmma_descriptor(
                                bbase, self._matrix_offset(bsw, blead, _plus(br0, kk),
                                                           _plus(bc0, n0)),
                                bsw.swizzle, *bsw.mn_major_offsets())
                            attrs["transpose_b"] = ir.UnitAttr.get()
                        d = self.op("ember_gpu.wgmma", [d, da, db], [vec_t], attrs)
                    self.op("vector.store", [d, acc.buf, off])
        self.op("ember_gpu.wgmma_commit")
        self.wgmma_pending = True

    def _register_a(self, a, b, m, n, what, b_kmajor=False):
        """A wgmma's A as an array in registers (f16/bf16, M x K): B's window
        (as `_mma_operands` gives it), K, the dtype, and `a_operand(mt, kk)`,
        the thread's four 32-bit registers of A's 64 x 16 tile (mt, kk).
        In the wgmma layout, a thread's part of a 64 x 16 tile is PTX's
        register fragment of A: 8 elements in a row from mt * K / 2 + kk / 2,
        two to a register, the first in the low half."""
        x = core.as_value(a)
        bbase, bsw, blead, br0, bc0, k, n2 = self._matrix_window(b, what)
        if b_kmajor:
            k, n2 = n2, k
        if x.ndim != 2 or x.shape[0] != m or x.shape[1] != k or n2 != n:
            raise ValueError(f"{what}: shapes {x.shape} @ {(k, n2)} do not accumulate into "
                             f"{(m, n)} (at {core.where()})")
        if x.dtype != bbase.dtype or x.dtype not in (np.dtype(np.float16),
                                                     np.dtype(dtypes.bfloat16)):
            raise _unsupported(f"{what} of {x.dtype} registers and {bbase.dtype} SMEM (f16 "
                               f"or bf16 both)")

        def off(start, align):
            return start % align if isinstance(start, int) else 0

        if not self._b_aligned(k, n, br0, bc0, bsw, b_kmajor):
            raise _unsupported(f"{what} of a B window not aligned to the tensor cores' tiles "
                               f"(at ({br0}, {bc0}), K = {k}, N = {n}: B's columns come in "
                               f"whole swizzle atoms of {bsw.cols})")
        v = self._in_layout(x, (m, k), x.dtype, "wgmma")
        with self.ctx:
            elem = core.mlir_type(core.ShapedArray((), x.dtype)).element_type
            eight_t = ir.VectorType.get([8], elem)
            regs_t = ir.VectorType.get([4], ir.IntegerType.get_signless(32))

        def a_operand(mt, kk):
            first = mt * (k // 2) + kk // 2
            xs = [self.op("tensor.extract", [v, self.index(first + i)], [elem])
                  for i in range(8)]
            return self.op("vector.bitcast", [self.op("vector.from_elements", xs, [eight_t])],
                           [regs_t])

        return (bbase, bsw, blead, br0, bc0), k, x.dtype, a_operand

    def _b_aligned(self, k, n, br0, bc0, bsw, b_kmajor):
        """Whether a B window (K x N; stored N x K if `b_kmajor`) starts and
        ends on the tensor cores' tiles."""
        def off(start, align):
            return start % align if isinstance(start, int) else 0

        kstep = 32 // bsw.itemsize
        if b_kmajor:  # rows N, columns K
            return not (k % kstep or n % 8 or off(br0, 8) or off(bc0, kstep))
        return not (k % kstep or n % bsw.cols or off(br0, 8) or off(bc0, bsw.cols))

    def _mma_operands(self, a, b, m, n, what, b_kmajor=False):
        """A (m x K, K-major) and B (K x n, N-major, or K-major: stored n x
        K) of a tensor-core MMA, as (base, layout, matrix offset, first row,
        first column) each, and K."""
        abase, asw, alead, ar0, ac0, m2, k = self._matrix_window(a, what)
        bbase, bsw, blead, br0, bc0, k2, n2 = self._matrix_window(b, what)
        if b_kmajor:
            k2, n2 = n2, k2
        if abase.dtype != bbase.dtype or abase.dtype not in _WGMMA_DTYPES:
            raise _unsupported(f"{what} of {abase.dtype} and {bbase.dtype} operands (f16, "
                               f"bf16 or f32 (as tf32) ones, both the same)")
        if abase.dtype.itemsize != 2 and not b_kmajor:
            raise ValueError(f"{what}: the tensor cores read {abase.dtype} operands K-major "
                             f"only: store B as N x K and pass plgpu.transpose_ref(b, (1, 0)) "
                             f"(at {core.where()})")
        kstep = _wgmma_k(abase.dtype)
        if k != k2 or (m2, n2) != (m, n):
            raise ValueError(f"{what}: shapes {(m2, k)} @ {(k2, n2)} do not accumulate into "
                             f"{(m, n)} (at {core.where()})")

        def off(start, align):
            return start % align if isinstance(start, int) else 0

        if k % kstep or off(ar0, 8) or off(ac0, kstep) or \
                not self._b_aligned(k, n, br0, bc0, bsw, b_kmajor):
            raise _unsupported(f"{what} of operand windows not aligned to the tensor cores' "
                               f"tiles (A at ({ar0}, {ac0}), B at ({br0}, {bc0}), K = {k}, "
                               f"N = {n}: B's columns come in whole swizzle atoms of "
                               f"{bsw.cols})")
        return (abase, asw, alead, ar0, ac0), (bbase, bsw, blead, br0, bc0), k

    def _pair(self, axis, what):
        """A 2-CTA pair along cluster axis `axis`: (the cta_group::2
        multicast mask of its blocks (i16), whether this block leads it)."""
        offsets, first, me = self._group_ranks((axis,))
        if len(offsets) != 2:
            raise ValueError(f"{what}: the collective axis {axis!r} must have size 2, got "
                             f"{len(offsets)} (at {core.where()})")
        if not self.tmem_collective:
            raise ValueError(f"{what}: a collective MMA needs collective TMEM "
                             f"(plgpu.TMEM(..., collective=True)) (at {core.where()})")
        with self.ctx:
            i16 = ir.IntegerType.get_signless(16)
            mask = self.op("arith.shli", [self.op("arith.constant", results=[i16], attrs={
                "value": ir.IntegerAttr.get(i16, sum(1 << o for o in offsets))}),
                self.op("arith.index_cast", [first], [i16])], [i16])
        return mask, self.cmp_eq(me, 0)

    def _tcgen05_commit(self, barrier, pair):
        """Arrival on `barrier` once the thread's MMAs completed; for a pair
        (its multicast mask), on the barrier of both blocks."""
        bars, bidx = self._barrier(barrier)
        if pair is None:
            self.op("ember_gpu.tcgen05_commit", [bars, bidx], attrs={
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0], context=self.ctx)})
            return
        self.op("ember_gpu.tcgen05_commit", [bars, bidx, pair], attrs={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 1], context=self.ctx),
            "collective": ir.UnitAttr.get(self.ctx)})

    def tcgen05_mma(self, acc, a, b, barrier, accumulate, collective_axis):
        """`plgpu.tcgen05_mma`: issued by one thread of the warpgroup, a
        128 x N x 16 MMA into TMEM per 16-deep slice of K, the first
        accumulating as asked, the rest always; with `barrier`, an arrival
        once they completed. With `collective_axis` (a 2-CTA pair), the
        pair's leader issues 256 x N x 16 MMAs (cta_group::2): each block
        holds 128 rows of A and N/2 columns of B at the same SMEM offsets,
        and its 128 rows of the product in its TMEM; the commit arrives on
        both blocks' barriers."""
        what = "tcgen05_mma"
        if not isinstance(acc, _KTmem):
            raise _unsupported(f"{what} into anything but a TMEM scratch buffer")
        if acc.dtype != np.float32:
            raise _unsupported(f"{what} into a {acc.dtype} accumulator (f32 ones)")
        m, n = acc.shape
        pair = lead = None
        if collective_axis is not None:
            pair, lead = self._pair(collective_axis, what)
            if m != TMEM_LANES or n % 32 or not 32 <= n <= 256:
                raise _unsupported(f"a collective {what} into {acc.shape} (128 x N per block, "
                                   f"N a multiple of 32 up to 256)")
        elif m != TMEM_LANES or n % 16 or not 16 <= n <= 256:
            raise _unsupported(f"{what} into {acc.shape} (128 x N, N a multiple of 16 up "
                               f"to 256)")
        (abase, asw, alead, ar0, ac0), (bbase, bsw, blead, br0, bc0), k = \
            self._mma_operands(a, b, m, n if pair is None else n // 2, what)
        idesc = tcgen05_instruction(m if pair is None else 2 * m, n, abase.dtype)

        with self.ctx:
            i1 = ir.IntegerType.get_signless(1)
            if isinstance(accumulate, (bool, np.bool_)):
                first = self.op("arith.constant", results=[i1],
                                attrs={"value": ir.IntegerAttr.get(i1, int(accumulate))})
            else:
                first = self._predicate(core.as_value(accumulate))
            yes = self.op("arith.constant", results=[i1],
                          attrs={"value": ir.IntegerAttr.get(i1, 1)})
            i32 = ir.IntegerType.get_signless(32)
            instr = self.op("arith.constant", results=[i32],
                            attrs={"value": ir.IntegerAttr.get(i32, idesc)})
            issuer = self.elected if lead is None else \
                self.op("arith.andi", [self.elected, lead], [i1])
            mma_attrs = {} if pair is None else {"collective": ir.UnitAttr.get()}
            with self.when(issuer):
                addr = acc.address()
                for kk in range(0, k, 16):
                    da = self._wgmma_descriptor(
                        abase, self._matrix_offset(asw, alead, ar0, _plus(ac0, kk)),
                        asw.swizzle, *asw.k_major_offsets(), tcgen05=True)
                    db = self._wgmma_descriptor(
                        bbase, self._matrix_offset(bsw, blead, _plus(br0, kk), bc0),
                        bsw.swizzle, *bsw.mn_major_offsets(), tcgen05=True)
                    self.op("ember_gpu.tcgen05_mma",
                            [addr, da, db, instr, first if kk == 0 else yes], attrs=mma_attrs)
                if barrier is not None:
                    self._tcgen05_commit(barrier, pair)

    def tcgen05_commit_arrive(self, barrier, collective_axis):
        issuer, pair = self.elected, None
        if collective_axis is not None:
            pair, lead = self._pair(collective_axis, "tcgen05_commit_arrive")
            with self.ctx:
                issuer = self.op("arith.andi", [self.elected, lead],
                                 [ir.IntegerType.get_signless(1)])
        with self.when(issuer):
            self._tcgen05_commit(barrier, pair)

    def async_load_tmem(self, src):
        """`plgpu.async_load_tmem(ref)`: the warpgroup reads a 128-lane TMEM
        buffer, thread t its lane (row) t (tcgen05.ld, 32x32b: a warp its 32
        lanes), in column chunks of at most 128; the value is in the *tmem*
        layout. The load completes here (a `tmem_wait load`), so the value
        is usable at once; `wait_load_tmem` has nothing left to wait for."""
        if not isinstance(src, _KTmem):
            raise _unsupported("async_load_tmem of anything but a whole TMEM scratch buffer")
        if src.dtype != np.float32:
            raise _unsupported(f"async_load_tmem of {src.dtype} TMEM (f32)")
        _check_tmem_shape(src.shape, "async_load_tmem")
        n = src.shape[1]
        warp = self.arith("remui", self.arith("divui", self.lane, 32), 4)
        addr = src.address(self.arith("muli", warp, 32))
        xs = []
        with self.ctx:
            i32 = ir.IntegerType.get_signless(32)
            f32 = ir.F32Type.get()
            loaded = []
            for col, c in self._tmem_chunks(n):
                at = addr if col == 0 else self.op("arith.addi", [addr, self.i32(col)], [i32])
                t = ir.VectorType.get([c], i32) if c > 1 else i32
                loaded.append((c, self.op("ember_gpu.tmem_load", [at], [t])))
            self.op("ember_gpu.tmem_wait")
            for c, v in loaded:
                if c == 1:
                    xs.append(self.op("arith.bitcast", [v], [f32]))
                    continue
                fv = self.op("arith.bitcast", [v], [ir.VectorType.get([c], f32)])
                for j in range(c):
                    xs.append(self.op("vector.extract", [fv], [f32], {
                        "static_position": ir.DenseI64ArrayAttr.get([j])}))
            v = self.op("tensor.from_elements", xs, [core.mlir_type(
                core.ShapedArray((n,), np.float32))])
        return self.wrap_wgmma(v, core.ShapedArray(src.shape, np.float32), "tmem")

    def wait_load_tmem(self):
        self.op("ember_gpu.tmem_wait")

    def _tmem_chunks(self, n):
        """Column chunks (start, count) of at most 128, powers of two, that
        tcgen05.ld/st move at once."""
        col, chunks = 0, []
        while col < n:
            c = min(128, 1 << ((n - col).bit_length() - 1))
            chunks.append((col, c))
            col += c
        return chunks

    def async_store_tmem(self, dst, value):
        """`plgpu.async_store_tmem(ref, value)`: thread t writes row t of the
        128-lane buffer (tcgen05.st, 32x32b, the value brought into the
        *tmem* layout first); visible to MMAs after `commit_tmem`."""
        if not isinstance(dst, _KTmem):
            raise _unsupported("async_store_tmem into anything but a whole TMEM scratch buffer")
        if dst.dtype != np.float32:
            raise _unsupported(f"async_store_tmem into {dst.dtype} TMEM (f32)")
        _check_tmem_shape(dst.shape, "async_store_tmem")
        v = self._in_layout(value, dst.shape, np.float32, "tmem")
        warp = self.arith("remui", self.arith("divui", self.lane, 32), 4)
        addr = dst.address(self.arith("muli", warp, 32))
        with self.ctx:
            i32 = ir.IntegerType.get_signless(32)
            f32 = ir.F32Type.get()
            for col, c in self._tmem_chunks(dst.shape[1]):
                xs = [self.op("tensor.extract", [v, self.index(col + j)], [f32])
                      for j in range(c)]
                if c == 1:
                    word = self.op("arith.bitcast", [xs[0]], [i32])
                else:
                    fv = self.op("vector.from_elements", xs, [ir.VectorType.get([c], f32)])
                    word = self.op("arith.bitcast", [fv], [ir.VectorType.get([c], i32)])
                at = addr if col == 0 else self.op("arith.addi", [addr, self.i32(col)], [i32])
                self.op("ember_gpu.tmem_store", [at, word])

    def commit_tmem(self):
        """`plgpu.commit_tmem`: the thread's TMEM stores complete, and the
        warpgroup's are ordered before its next tcgen05 operations."""
        self.op("ember_gpu.tmem_wait", attrs={"store": ir.UnitAttr.get(self.ctx)})
        self.op("ember_gpu.tcgen05_fence")
        self._warpgroup_sync()
        self.op("ember_gpu.tcgen05_fence", attrs={"after": ir.UnitAttr.get(self.ctx)})

    def wgmma_wait(self, n):
        if int(n) == 0:
            self.wgmma_pending = False
        with self.ctx:
            self.op("ember_gpu.wgmma_wait", attrs={"allow_in_flight": ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), int(n))})

    def _not_in_warp(self, what):
        if self.in_warp:
            raise _unsupported(f"{what} inside pl.core_map(plgpu.WarpMesh) (arrays are spread "
                               f"over a warpgroup's threads; a warp issues copies, MMAs and "
                               f"barrier operations)")

    def warp_map(self, axis_name, fn):
        """`pl.core_map(plgpu.WarpMesh(axis_name))`: each of the warpgroup's
        4 warps runs `fn`, `lax.axis_index(axis_name)` its index; what one
        thread issues (copies, MMAs, arrivals) each warp's first thread
        issues, and what synchronizes the warpgroup synchronizes the warp."""
        if self.in_warp:
            raise _unsupported("pl.core_map(plgpu.WarpMesh) inside another")
        saved = self.elected, self.coords.get(axis_name)
        self.coords[axis_name] = self.arith("divui", self.lane, 32)
        self.elected = self.cmp_eq(self.arith("remui", self.lane, 32), 0)
        self.in_warp = True
        try:
            fn()
        finally:
            self.in_warp = False
            self.elected = saved[0]
            if saved[1] is None:
                del self.coords[axis_name]
            else:
                self.coords[axis_name] = saved[1]

    def load(self, base, norm):
        shape = state._view_shape(norm)
        if shape:
            self._not_in_warp("reading an array from a ref")
        aval = core.ShapedArray(shape, base.dtype)
        with self.ctx:
            elem = ir.MemRefType(base.value.type).element_type
            _check_replicated(aval)
            if not _strided(aval):
                # Replicated: every thread reads every element.
                scalars = [self._read(base, norm, idx, elem) for idx in np.ndindex(*shape)]
                v = self.op("tensor.from_elements", scalars, [core.mlir_type(aval)])
                return core.Tracer(self.trace, v, aval)
            scalars = [self._read(base, norm, idx, elem) for idx in self._elements(shape)]
            v = self.op("tensor.from_elements", scalars, [core.mlir_type(_frag_aval(aval))])
        self.sources[v] = (base, norm, self.writes.get(id(base), 0), None,
                           len(self.loop_reads))
        return self.trace._wrap(v, aval)

    def _written(self, base):
        """Counts a write of `base` (a store, or a copy into it)."""
        self.writes[id(base)] = self.writes.get(id(base), 0) + 1

    def _source(self, value, aval):
        """(buffer, window, index map) holding `value`, a strided array:
        the buffer it was read from if nothing wrote it since, else a
        staging buffer in shared memory it is written to now."""
        src = self.sources.get(value)
        if src is not None and self.writes.get(id(src[0]), 0) == src[2]:
            if src[4] < len(self.loop_reads):
                # Loaded before the loop, read in each iteration: checked
                # when the loop ends.
                self.loop_reads[-1].append(src)
            return src[0], src[1], src[3]
        return self.stage(value, aval)

    @contextlib.contextmanager
    def _loop_body(self):
        """Inside a loop body: a buffer read through a value's source must
        not be written later in the body (the next iteration would read the
        new contents)."""
        self.loop_reads.append([])
        try:
            yield
        finally:
            reads = self.loop_reads.pop()
        for base, _, count, _, _ in reads:
            if self.writes.get(id(base), 0) != count:
                raise _unsupported("a loop that writes a buffer whose earlier contents it "
                                   "reads through a value loaded before the write")
        if self.loop_reads:
            self.loop_reads[-1].extend(reads)

    def _carry_buffers(self, leaves, before=None):
        """(plain values, avals, tensor types, per-thread buffers holding
        them) for values carried across control flow; the buffers are
        allocated before the op `before` (else here)."""
        vals = [self.plain(core.as_value(x)) for x in leaves]
        avals = [core.ShapedArray(v.shape, v.dtype, weak_type=v.aval.weak_type) for v in vals]
        types = [ir.RankedTensorType(self.trace.to_value(v).type) for v in vals]
        with self.ctx, self.trace.location():
            ip = ir.InsertionPoint(before) if before is not None else \
                ir.InsertionPoint(self.trace.block)
            bufs = [ir.Operation.create(
                "memref.alloca", results=[ir.MemRefType.get(list(t.shape), t.element_type)],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])},
                ip=ip).results[0] for t in types]
        # A value in a register layout (wgmma's) is carried in it.
        for v, b in zip(vals, bufs):
            if (kind := self.wgmma_values.get(self.trace.to_value(v))) is not None:
                self.buffer_kinds[b] = kind
        return vals, avals, types, bufs

    def _spill_outputs(self, out, tree, avals, bufs, types, what):
        """Stores a region's results (matching the carried values) into
        their buffers."""
        from .. import tree_util

        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"{what}: the function returned {out_tree}, expected {tree} "
                            f"(at {core.where()})")
        for o, a, buf, t in zip(out_leaves, avals, bufs, types):
            o = self.plain(core.as_value(o))
            if o.shape != a.shape:
                raise TypeError(f"{what}: the function returned {o.aval.str_short()} where "
                                f"{a.str_short()} is expected (at {core.where()})")
            v = self.trace.to_value(o.astype(a.dtype) if o.dtype != a.dtype else o)
            kind = self.buffer_kinds.get(buf)
            if self.wgmma_values.get(v) != kind:  # into the carried value's layout
                v = (self.to_wgmma(v, a, kind) if kind is not None else
                     self.trace.to_value(self.gather(v, a, a, lambda i: i)))
            self._spill(v, buf, t)

    def _filled(self, tree, avals, bufs, types):
        from .. import tree_util

        def wrap(buf, t, a):
            kind = self.buffer_kinds.get(buf)
            v = self._fill(buf, t)
            return self.wrap_wgmma(v, a, kind) if kind is not None else self.trace._wrap(v, a)

        return tree_util.tree_unflatten(
            tree, [wrap(buf, t, a) for buf, t, a in zip(bufs, types, avals)])

    def run_fori(self, lower, upper, body, init):
        """`lax.fori_loop`: an scf.for whose carried values (strided or
        replicated, by their shapes; rows-layout ones made replicated) live
        in per-thread buffers allocated before the loop, so that every
        buffer allocated inside the body is a temporary of one iteration
        (what `ember-gpu-hoist-allocas` relies on)."""
        from .. import tree_util

        leaves, tree = tree_util.tree_flatten(init)
        vals, avals, types, bufs = self._carry_buffers(leaves)
        for v, buf, t in zip(vals, bufs, types):
            self._spill(self.trace.to_value(v), buf, t)
        lo, hi, one = self.index(lower), self.index(upper), self.index(1)
        with self.ctx, self.trace.location():
            loop = ir.Operation.create("scf.for", results=[], operands=[lo, hi, one], regions=1,
                                       ip=ir.InsertionPoint(self.trace.block))
            block = loop.regions[0].blocks.append(ir.IndexType.get())
        with self._at(block), self._loop_body():
            out = body(self.scalar_tracer(block.arguments[0]),
                       self._filled(tree, avals, bufs, types))
            self._spill_outputs(out, tree, avals, bufs, types, "fori_loop")
            self.op("scf.yield")
        return self._filled(tree, avals, bufs, types)

    def run_nd_loop(self, grid, axes, init_carry, body, info_type):
        """`plgpu.nd_loop`: an scf.for over the flat points of `grid` from
        this block's position along `axes` in steps of their size (a
        persistent kernel's round robin), carrying `init_carry` in
        per-thread buffers."""
        from .. import tree_util

        me, size = self.index(0), 1
        for a in axes:
            n = axis_extent(a, self.grid_names, self.grid, self.cluster_names, self.cluster)
            me = self.arith("addi", self.arith("muli", me, n), self.coords[a])
            size *= n
        total = math.prod(grid)
        carried = init_carry is not None
        if carried:
            leaves, tree = tree_util.tree_flatten(init_carry)
            vals, avals, types, bufs = self._carry_buffers(leaves)
            for v, buf, t in zip(vals, bufs, types):
                self._spill(self.trace.to_value(v), buf, t)
        with self.ctx, self.trace.location():
            loop = ir.Operation.create(
                "scf.for", results=[], operands=[me, self.index(total), self.index(size)],
                regions=1, ip=ir.InsertionPoint(self.trace.block))
            block = loop.regions[0].blocks.append(ir.IndexType.get())
        with self._at(block), self._loop_body():
            lin = block.arguments[0]
            idx = tuple(self.scalar_tracer(i) for i in self._delinearize(lin, list(grid)))
            local = self.scalar_tracer(self.arith("divui", self.arith("subi", lin, me), size))
            steps = self.scalar_tracer(self.arith("divui", self.arith(
                "subi", self.index(total + size - 1), me), size))
            info = info_type(idx, local, steps)
            if carried:
                out = body(info, carry=self._filled(tree, avals, bufs, types))
                self._spill_outputs(out, tree, avals, bufs, types, "nd_loop")
            else:
                body(info)
            self.op("scf.yield")
        return self._filled(tree, avals, bufs, types) if carried else None

    def run_while(self, cond_fun, body_fun, init):
        """`lax.while_loop`: an scf.while over per-thread carry buffers."""
        from .. import tree_util

        leaves, tree = tree_util.tree_flatten(init)
        vals, avals, types, bufs = self._carry_buffers(leaves)
        for v, buf, t in zip(vals, bufs, types):
            self._spill(self.trace.to_value(v), buf, t)
        with self.ctx, self.trace.location():
            loop = ir.Operation.create("scf.while", results=[], operands=[], regions=2,
                                       ip=ir.InsertionPoint(self.trace.block))
            before = loop.regions[0].blocks.append()
            after = loop.regions[1].blocks.append()
        with self._at(before), self._loop_body():
            p = core.as_value(cond_fun(self._filled(tree, avals, bufs, types)))
            if p.shape != ():
                raise TypeError(f"while_loop: the condition must be a scalar, got "
                                f"{p.aval.str_short()} (at {core.where()})")
            self.op("scf.condition", [self._predicate(p)])
        with self._at(after), self._loop_body():
            out = body_fun(self._filled(tree, avals, bufs, types))
            self._spill_outputs(out, tree, avals, bufs, types, "while_loop")
            self.op("scf.yield")
        return self._filled(tree, avals, bufs, types)

    def run_switch(self, index, branches, operands):
        """`lax.switch`: the index clamped into range (as JAX does), then a
        chain of `cond`s, branch k taken where the index is k."""
        from ..numpy import lax_numpy as jnp

        i = core.as_value(index)
        if i.shape != () or not dtypes.is_int(i.dtype):
            raise TypeError(f"switch: index must be a scalar integer, got {i.aval.str_short()} "
                            f"(at {core.where()})")
        i = jnp.clip(i.astype(np.int32), 0, len(branches) - 1)

        def from_branch(k):
            if k == len(branches) - 1:
                return branches[k]
            return lambda *ops: self.run_cond(i == k, branches[k], from_branch(k + 1), ops)

        return from_branch(0)(*operands)

    def run_cond(self, pred, true_fun, false_fun, operands):
        """`lax.cond`: an scf.if whose branches store their results in
        per-thread buffers (allocated before it, typed by the first
        branch's results)."""
        from .. import tree_util

        p = self._predicate(core.as_value(pred))
        with self.ctx, self.trace.location():
            o = ir.Operation.create("scf.if", results=[], operands=[p], regions=2,
                                    ip=ir.InsertionPoint(self.trace.block))
            then, other = o.regions[0].blocks.append(), o.regions[1].blocks.append()
        carried = None
        for block, fn in ((then, true_fun), (other, false_fun)):
            with self._at(block):
                out = fn(*operands)
                if carried is None:
                    leaves, tree = tree_util.tree_flatten(out)
                    _, avals, types, bufs = self._carry_buffers(leaves, before=o)
                    carried = (tree, avals, bufs, types)
                tree, avals, bufs, types = carried
                self._spill_outputs(out, tree, avals, bufs, types, "cond")
                self.op("scf.yield")
        return self._filled(*carried)

    def _spill(self, value, buf, t):
        """Stores a per-thread tensor into its buffer, element by element."""
        with self.ctx:
            for idx in np.ndindex(*t.shape):
                ii = [self.index(i) for i in idx]
                x = self.op("tensor.extract", [value, *ii], [t.element_type])
                self.op("memref.store", [x, buf, *ii])

    def _fill(self, buf, t):
        """A per-thread tensor loaded from its buffer."""
        with self.ctx:
            xs = [self.op("memref.load", [buf, *[self.index(i) for i in idx]],
                          [t.element_type]) for idx in np.ndindex(*t.shape)]
            return self.op("tensor.from_elements", xs, [t])

    def _stage_alloc(self, nbytes, align=16):
        """A byte offset in this warpgroup's part of the staging area."""
        self.dyn_bytes = -(-self.dyn_bytes // align) * align
        offset = self.dyn_bytes
        self.dyn_bytes += -(-nbytes // 16) * 16
        return offset

    def alloc_smem(self, shape, dtype, name=None, transforms=(), shared=False):
        """An SMEM buffer of the calling warpgroup allocated while the
        kernel runs (`emit_pipeline`'s slots), 128-byte aligned for TMA
        (1024 if swizzled: the swizzle pattern's period); with `shared`,
        one buffer of the block that every warpgroup sees."""
        shape = tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        swizzled = _swizzle_of(transforms, shape, dtype, self.infer_transforms)
        align = 1024 if swizzled else 128
        if shared:
            at = self._shared_alloc(math.prod(shape) * dtype.itemsize, align)
        else:
            at = self._stage_offset(self._stage_alloc(math.prod(shape) * dtype.itemsize,
                                                      align=align))
        if swizzled:
            self.stage_align = 1024
        with self.ctx:
            t = ir.MemRefType.get([math.prod(shape)] if swizzled else list(shape), core.mlir_type(
                core.ShapedArray((), dtype)).element_type, None,
                ir.Attribute.parse("#gpu.address_space<workgroup>"))
            buf = self.op("memref.view", [self.stage_area, at], [t])
        return _KRef(self, buf, shape, dtype, "SMEM", swizzled=swizzled)

    def scoped(self, t, collective_axes=()):
        """A buffer of scratch type `t` for `pl.run_scoped`, allocated
        where the call is: the calling warpgroup's, or with
        `collective_axes` (the thread axis) one of the block that every
        warpgroup allocates at the same point."""
        for a in collective_axes:
            if a != self.thread_name:
                raise _unsupported(f"run_scoped with collective_axes {a!r} (only the "
                                   f"kernel's thread axis)")
        shared = bool(collective_axes)
        if hasattr(t, "num_arrivals"):
            if hasattr(t, "collective_axes"):
                raise _unsupported("a ClusterBarrier in run_scoped")
            return self.alloc_barriers(t.num_arrivals, t.num_barriers, shared=shared)
        if type(t).__name__ == "ACC":
            return _KAcc(self, t.shape, t.dtype)
        if getattr(getattr(t, "space", None), "name", None) == "SMEM":
            return self.alloc_smem(t.shape, t.dtype, transforms=getattr(t, "transforms", ()),
                                   shared=shared)
        raise _unsupported(f"{type(t).__name__} in run_scoped")

    def acc_from(self, value):
        """`plgpu.ACC.init(value)` in `pl.run_state`: an accumulator
        holding `value`."""
        x = core.as_value(value)
        acc = _KAcc(self, x.shape, np.float32)
        self.acc_write(acc, x)
        return acc

    def alloc_barriers(self, arrivals, n, shared=False):
        """`n` mbarriers of the calling warpgroup, each completing after
        `arrivals` arrivals, allocated while the kernel runs: one thread
        initializes them, then the warpgroup synchronizes. With `shared`,
        barriers of the block, which every warpgroup allocates at the same
        point: one thread of the block initializes them, then the block
        synchronizes."""
        at = (self._shared_alloc(8 * n, 8) if shared
              else self._stage_offset(self._stage_alloc(8 * n, align=8)))
        with self.ctx:
            i64 = ir.IntegerType.get_signless(64)
            t = ir.MemRefType.get([n], i64, None,
                                  ir.Attribute.parse("#gpu.address_space<workgroup>"))
            bars = self.op("memref.view", [self.stage_area, at], [t])
            first = (self.cmp_eq(self.hw_index("thread_id", "x"), 0) if shared
                     else self.elected)
            with self.when(first):
                for i in range(n):
                    self.op("ember_gpu.barrier_init", [bars, self.index(i)],
                            attrs={"arrivals": ir.IntegerAttr.get(i64, int(arrivals))})
            if shared:
                self._block_sync()
            else:
                self._warpgroup_sync()
            i32 = ir.IntegerType.get_signless(32)
            phases = ir.Operation.create(
                "memref.alloca", results=[ir.MemRefType.get([n], i32)],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])},
                loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block)).results[0]
            for i in range(n):
                self.op("memref.store", [self.i32(0), phases, self.index(i)])
        return _KBarrier(_PipelineBarrier(arrivals, n), bars, phases)

    def stage(self, value, aval):
        """Writes a strided value to a fresh staging buffer (each thread its
        part) between two warpgroup barriers, so that any thread can read
        any element; returns (buffer, window, None)."""
        shape = tuple(aval.shape)
        itemsize = np.dtype(aval.dtype).itemsize
        offset = self._stage_alloc(math.prod(shape) * itemsize)
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            t = ir.MemRefType.get(list(shape), elem, None, ir.Attribute.parse(
                "#gpu.address_space<workgroup>"))
            buf = self.op("memref.view", [self.stage_area, self._stage_offset(offset)], [t])
        ref = _KRef(self, buf, shape, aval.dtype, "SMEM")
        norm = state._normalize(shape, (), "stage")
        # Earlier readers of this buffer (a loop's previous iteration) are
        # done before it is overwritten.
        self._warpgroup_sync()
        with self.ctx:
            for j, idx in enumerate(self._value_elements(value, shape)):
                x = self.op("tensor.extract", [value, self.index(j)], [elem])
                self.op("memref.store", [x, buf, *idx])
        self._warpgroup_sync()
        self.sources[value] = (ref, norm, self.writes.get(id(ref), 0), None,
                               len(self.loop_reads))
        return ref, norm, None

    def _stage_offset(self, offset):
        """The byte offset of a staging buffer in this warpgroup's part."""
        return self.arith("addi", self.stage_base, offset)

    def _shared_alloc(self, nbytes, align):
        """A byte offset in the block's shared part of the staging area."""
        self.shared_bytes = -(-self.shared_bytes // align) * align
        offset = self.shared_bytes
        self.shared_bytes += -(-nbytes // 16) * 16
        return self.index(offset)

    def read_scalar(self, value, aval, idx):
        """Element `idx` (index values) of a strided or replicated value."""
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            if value not in self.strided_values and value not in self.wgmma_values:
                if value in self.rows:
                    raise _unsupported("this use of a reduction along rows")
                return self.op("tensor.extract", [value, *idx], [elem])
            base, norm, fn = self._source(value, aval)
            src_idx = fn(idx) if fn is not None else idx
            return self._read(base, norm, src_idx, elem)

    def gather(self, value, in_aval, aval, index_fn):
        """A strided value whose element `i` is `value`'s element
        `index_fn(i)` (a transpose, a broadcast): each thread reads its
        elements from the buffer holding `value`. The result keeps that
        buffer as its source, through the composed index map."""
        base, norm, fn = self._source(value, in_aval)
        composed = (lambda i: fn(index_fn(i))) if fn is not None else index_fn
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            scalars = [self._read(base, norm, composed(idx), elem)
                       for idx in self._elements(aval.shape)]
            v = self.op("tensor.from_elements", scalars, [core.mlir_type(_frag_aval(aval))])
        self.sources[v] = (base, norm, self.writes.get(id(base), 0), composed,
                           len(self.loop_reads))
        return self.trace._wrap(v, aval)

    def dot(self, lhs, rhs, lhs_aval, rhs_aval, aval, attributes):
        """A matrix product on the CUDA cores: each thread computes its
        elements of the result, looping over the contracted dimension and
        reading both operands from the buffers holding them."""
        lc = list(attributes["lhs_contracting_dimensions"])
        rc = list(attributes["rhs_contracting_dimensions"])
        if (list(attributes["lhs_batching_dimensions"]) or len(lhs_aval.shape) != 2
                or len(rhs_aval.shape) != 2 or len(lc) != 1 or len(rc) != 1):
            raise _unsupported("a product other than of two matrices")
        kdim = lhs_aval.shape[lc[0]]
        out_elem_dtype = np.dtype(aval.dtype)
        acc_dtype = np.dtype(np.float32) if dtypes.is_float(out_elem_dtype) and \
            out_elem_dtype.itemsize < 4 else out_elem_dtype
        # Sources first: staging happens outside the loop.
        ops = []
        for v, av in ((lhs, lhs_aval), (rhs, rhs_aval)):
            if v in self.strided_values:
                self._source(v, av)
            ops.append((v, av))
        outs = (self._elements(aval.shape) if _strided(aval)
                else [[self.index(i) for i in idx] for idx in np.ndindex(*aval.shape)])
        with self.ctx:
            acc_t = core.mlir_type(core.ShapedArray((), acc_dtype)).element_type
            is_float = dtypes.is_float(acc_dtype)
            zero_attr = (ir.FloatAttr.get(acc_t, 0.0) if is_float
                         else ir.IntegerAttr.get(acc_t, 0))
            zero = self.op("arith.constant", results=[acc_t], attrs={"value": zero_attr})
            lo, hi, one = self.index(0), self.index(kdim), self.index(1)
            loop = ir.Operation.create(
                "scf.for", results=[acc_t] * len(outs), operands=[lo, hi, one] + [zero] * len(outs),
                regions=1, loc=self.trace.location(), ip=ir.InsertionPoint(self.trace.block))
            block = loop.regions[0].blocks.append(ir.IndexType.get(), *([acc_t] * len(outs)))
        with self._at(block), self.ctx:
            kk = block.arguments[0]
            new = []
            for e, idx in enumerate(outs):
                i, j = idx
                a = self.read_scalar(lhs, lhs_aval, [i, kk] if lc[0] == 1 else [kk, i])
                b = self.read_scalar(rhs, rhs_aval, [kk, j] if rc[0] == 0 else [j, kk])
                a, b = self._to(a, acc_t), self._to(b, acc_t)
                acc = block.arguments[1 + e]
                if is_float:
                    new.append(self.op("math.fma", [a, b, acc], [acc_t]))
                else:
                    new.append(self.op("arith.addi", [acc, self.op("arith.muli", [a, b],
                                                                    [acc_t])], [acc_t]))
            self.op("scf.yield", new)
        with self.ctx:
            res_t = core.mlir_type(core.ShapedArray((), out_elem_dtype)).element_type
            vals = [self._to(loop.results[e], res_t) for e in range(len(outs))]
            if _strided(aval):
                v = self.op("tensor.from_elements", vals, [core.mlir_type(_frag_aval(aval))])
                return self.trace._wrap(v, aval)
            v = self.op("tensor.from_elements", vals, [core.mlir_type(aval)])
            return core.Tracer(self.trace, v, aval)

    def _to(self, x, t):
        """A float scalar converted to the float type `t`."""
        if x.type == t:
            return x
        wider = ir.FloatType(x.type).width < ir.FloatType(t).width
        return self.op("arith.extf" if wider else "arith.truncf", [x], [t])

    def rows_to_replicated(self, value, aval, layout):
        """A rows-layout value as a replicated one: the lane holding each
        row's first run writes the row's value to a staging buffer, and
        every thread reads all of them."""
        shape = tuple(aval.shape)
        itemsize = np.dtype(aval.dtype).itemsize
        offset = self._stage_alloc(layout.rows * itemsize)
        group = layout.width // layout.v
        with self.ctx:
            elem = core.mlir_type(aval).element_type
            t = ir.MemRefType.get([layout.rows], elem, None, ir.Attribute.parse(
                "#gpu.address_space<workgroup>"))
            buf = self.op("memref.view", [self.stage_area, self._stage_offset(offset)], [t])
            self._warpgroup_sync()
            first = self.cmp_eq(self.arith("remui", self.lane, group), 0)
            with self.when(first):
                for r in range(layout.runs):
                    slot = self.arith("addi", self.lane, r * WARPGROUP)
                    row = self.arith("divui", self.arith("muli", slot, layout.v), layout.width)
                    x = self.op("tensor.extract", [value, self.index(r)], [elem])
                    self.op("memref.store", [x, buf, row])
            self._warpgroup_sync()
            scalars = [self.op("memref.load", [buf, self.index(i)], [elem])
                       for i in range(layout.rows)]
            v = self.op("tensor.from_elements", scalars, [core.mlir_type(aval)])
        _ = shape
        return core.Tracer(self.trace, v, aval)

    def store(self, base, norm, val):
        from ..numpy import lax_numpy as jnp

        shape = state._view_shape(norm)
        if shape:
            self._not_in_warp("writing an array into a ref")
        x = self.plain(core.as_value(val))
        if x.dtype != base.dtype:
            x = x.astype(base.dtype)
        if x.shape != shape:
            x = jnp.broadcast_to(x, shape)
        aval = core.ShapedArray(shape, base.dtype)
        v = self.trace.to_value(x)
        self._written(base)
        with self.ctx:
            elem = ir.MemRefType(base.value.type).element_type
            if not _strided(aval) and v not in self.wgmma_values:
                # Replicated: one thread of the warpgroup writes.
                with self.when(self.elected):
                    for idx in np.ndindex(*shape):
                        consts = [self.index(i) for i in idx]
                        s = self.op("tensor.extract", [v, *consts], [elem])
                        self._write(base, norm, consts, s)
            else:
                for j, idx in enumerate(self._value_elements(v, shape)):
                    s = self.op("tensor.extract", [v, self.index(j)], [elem])
                    self._write(base, norm, idx, s)
        # The warpgroup's threads see each other's writes before reading the
        # buffer in another layout (a scalar, a broadcast, a transpose).
        self._warpgroup_sync()

    # -- plgpu operations ------------------------------------------------------

    def _descriptor(self, ref, box, swizzle=0):
        if not isinstance(ref, _KRef) or ref.space != "GMEM":
            raise TypeError(f"a TMA copy's global end must be a kernel operand in GMEM "
                            f"(at {core.where()})")
        key = (ref.operand, tuple(box), swizzle)
        if key not in self._desc_index:
            self._desc_index[key] = len(self.descriptors)
            self.descriptors.append((ref.operand, tuple(box), ref.dtype, swizzle))
        with self.ctx:
            i8 = ir.IntegerType.get_signless(8)
            return self.op("llvm.getelementptr", [self.tma], [self.tma.type], {
                "rawConstantIndices": ir.DenseI32ArrayAttr.get(
                    [TMA_DESCRIPTOR_BYTES * self._desc_index[key]]),
                "elem_type": ir.TypeAttr.get(i8)})

    def _tma_box(self, gmem, smem, what):
        """(GMEM base, the box's full shape and coordinates, SMEM base, the
        SMEM window's offset in elements)."""
        gbase, gnorm = _base_norm(gmem)
        sbase, snorm = _base_norm(smem)
        if gbase.space != "GMEM" or sbase.space != "SMEM":
            raise TypeError(f"{what}: copies between a GMEM ref and an SMEM ref "
                            f"(at {core.where()})")
        if any(k == "ds" and s.stride != 1 for k, s in gnorm):
            raise _unsupported(f"{what} of a strided GMEM window")
        box = [s.size if k == "ds" else 1 for k, s in gnorm]
        window = state._view_shape(snorm)
        if math.prod(box) != math.prod(window):
            raise ValueError(f"{what}: the GMEM window {tuple(box)} and the SMEM window "
                             f"{window} differ in size (at {core.where()})")
        coords = [s.start if k == "ds" else s for k, s in gnorm]
        return gbase, box, coords, sbase, self._window_offset(sbase, snorm, what)

    def _swizzled_strips(self, gbase, box, coords, smem, what, split=1, part=None):
        """A TMA copy between a GMEM box and a whole swizzled SMEM matrix,
        as one copy per column strip: [(descriptor, coordinates (i32),
        the strip's SMEM view)]. With `split`, the copies of part `part` (an
        index value) of `split` equal parts of the rows (a collective
        copy's share)."""
        sbase, sw, lead, r0, c0, rows, cols = self._matrix_window(smem, what)
        if not all(isinstance(x, int) for x in (r0, c0)) or \
                (r0, c0, rows, cols) != (0, 0, sw.rows, sw.width):
            raise _unsupported(f"{what} of part of a swizzled SMEM matrix (a copy fills "
                               f"whole matrices)")
        # The matrix's rows are the last box dimension before the columns
        # that is not 1 (`q_ref.at[b, pl.ds(s, 64), head]`: rows, then a
        # head index, then the columns).
        r = max((d for d in range(len(box) - 1) if box[d] != 1), default=len(box) - 2)
        if len(box) < 2 or box[-1] != cols or box[r] != rows or \
                math.prod(box) != rows * cols:
            raise _unsupported(f"{what} between a GMEM box {tuple(box)} and a swizzled SMEM "
                               f"matrix {(rows, cols)} (the box must be the matrix, its "
                               f"columns the last dimension)")
        p = rows // split
        if rows % split or p % 8:
            raise _unsupported(f"{what} over {split} blocks of a swizzled {rows}-row matrix "
                               f"(each block's rows must be a multiple of 8)")
        strip_box = list(box)
        strip_box[r], strip_box[-1] = p, sw.cols
        desc = self._descriptor(gbase, strip_box, sw.swizzle)
        out = []
        with self.ctx:
            first_row = self.arith("muli", part, p) if split > 1 else None
            for st in range(cols // sw.cols):
                cs = list(coords)
                if st:
                    cs[-1] = self.op("arith.addi", [cs[-1], self.i32(st * sw.cols)],
                                     [cs[-1].type])
                at = self.arith("addi", lead, st * sw.strip_elems())
                if first_row is not None:
                    cs[r] = self.op("arith.addi", [cs[r], self.i32(first_row)], [cs[r].type])
                    at = self.arith("addi", at, self.arith("muli", first_row, sw.cols))
                out.append((desc, cs, self._smem_view(sbase, at, strip_box)))
        return out

    def _window_offset(self, sbase, snorm, what):
        """The offset (elements) of a contiguous window of an SMEM buffer:
        full trailing dimensions, one partial dimension, single elements
        before it."""
        sizes = [s.size if k == "ds" else 1 for k, s in snorm]
        partial = [d for d, ((k, s), n) in enumerate(zip(snorm, sbase.shape))
                   if not (k == "ds" and s.stride == 1 and s.size == n and
                           isinstance(s.start, int) and s.start == 0)]
        p = max(partial, default=-1)
        if (any(sizes[d] != 1 for d in range(p)) or
                (p >= 0 and snorm[p][0] == "ds" and snorm[p][1].stride != 1)):
            raise _unsupported(f"{what} through an SMEM window that is not contiguous")
        offset = self.index(0)
        for d, (k, s) in enumerate(snorm):
            start = s.start if k == "ds" else s
            if isinstance(start, (int, np.integer)) and int(start) == 0:
                continue
            stride = math.prod(sbase.shape[d + 1:])
            offset = self.arith("addi", offset, self.arith("muli", self.index(start), stride))
        return offset

    def _smem_view(self, sbase, offset, shape):
        """`shape` contiguous elements of an SMEM buffer from `offset`."""
        with self.ctx:
            t = ir.MemRefType(sbase.value.type)
            dyn = ir.ShapedType.get_dynamic_stride_or_offset()
            strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
            view_t = ir.MemRefType.get(list(shape), t.element_type,
                                       ir.StridedLayoutAttr.get(dyn, strides), t.memory_space)
            return self.op("memref.reinterpret_cast", [sbase.value, offset], [view_t], {
                "static_offsets": ir.DenseI64ArrayAttr.get([dyn]),
                "static_sizes": ir.DenseI64ArrayAttr.get(list(shape)),
                "static_strides": ir.DenseI64ArrayAttr.get(strides),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 1, 0, 0])})

    def _barrier(self, barrier):
        if not isinstance(barrier, _KBarrier):
            raise TypeError(f"expected a barrier, got {type(barrier).__name__} "
                            f"(at {core.where()})")
        return barrier.value, self.index(0 if barrier.index is None else barrier.index)

    def copy_gmem_to_smem(self, src, dst, barrier, collective_axes=None, leader_tracked=None):
        what = "copy_gmem_to_smem"
        if leader_tracked is not None:
            return self._leader_tracked_copy(src, dst, barrier, collective_axes,
                                             leader_tracked, what)
        if _base_norm(dst)[0].swizzled is not None:
            return self._copy_into_swizzled(src, dst, barrier, collective_axes, what)
        gbase, box, coords, sbase, soffset = self._tma_box(src, dst, what)
        self._written(sbase)
        bars, bidx = self._barrier(barrier)
        nbytes = math.prod(box) * gbase.dtype.itemsize
        coords = [self.i32(self.index(c)) for c in coords]
        if collective_axes is None:
            desc = self._descriptor(gbase, box)
            smem = self._smem_view(sbase, soffset, box)
            with self.when(self.elected):
                self.op("ember_gpu.barrier_arrive", [bars, bidx, self.i32(nbytes)],
                        attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                            [1, 1, 1, 0], context=self.ctx)})
                self._copy_op(desc, coords, smem, bars, bidx, None)
            return
        # Collective: every block of the group expects the whole box and
        # loads its part (split along the box's outermost dimension of more
        # than one element), multicast into the SMEM of all of them.
        offsets, first, me = self._group_ranks(collective_axes)
        n = len(offsets)
        split = next((d for d, b in enumerate(box) if b > 1), None)
        if split is None or box[split] % n:
            raise _unsupported(f"{what} over {n} blocks of a box {tuple(box)} whose outermost "
                               f"dimension does not split {n} ways")
        part = list(box)
        part[split] //= n
        desc = self._descriptor(gbase, part)
        mask = sum(1 << o for o in offsets)
        with self.ctx:
            i16 = ir.IntegerType.get_signless(16)
            first16 = self.op("arith.index_cast", [first], [i16])
            m = self.op("arith.shli", [self.op("arith.constant", results=[i16], attrs={
                "value": ir.IntegerAttr.get(i16, mask)}), first16], [i16])
        # This block's part: rows [me * p, (me + 1) * p) of the split dimension.
        rows = self.arith("muli", me, part[split])
        coords[split] = self.op("arith.addi", [coords[split], self.i32(rows)],
                                [coords[split].type])
        smem = self._smem_view(sbase, self.arith(
            "addi", soffset, self.arith("muli", rows, math.prod(box[split + 1:]))), part)
        with self.when(self.elected):
            self.op("ember_gpu.barrier_arrive", [bars, bidx, self.i32(nbytes)],
                    attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                        [1, 1, 1, 0], context=self.ctx)})
            self._copy_op(desc, coords, smem, bars, bidx, m)

    def _gmem_box(self, gmem, what):
        gbase, gnorm = _base_norm(gmem)
        if gbase.space != "GMEM":
            raise TypeError(f"{what}: copies between a GMEM ref and an SMEM ref "
                            f"(at {core.where()})")
        if any(k == "ds" and s.stride != 1 for k, s in gnorm):
            raise _unsupported(f"{what} of a strided GMEM window")
        box = [s.size if k == "ds" else 1 for k, s in gnorm]
        coords = [self.i32(self.index(s.start if k == "ds" else s)) for k, s in gnorm]
        return gbase, box, coords

    def _copy_into_swizzled(self, src, dst, barrier, collective_axes, what):
        """A TMA copy into a swizzled SMEM matrix, a strip at a time.
        Collective: every block of the group expects the whole matrix and
        loads its share of the rows of each strip, multicast into the SMEM
        of all of them."""
        gbase, box, coords = self._gmem_box(src, what)
        mask = None
        if collective_axes is None:
            strips = self._swizzled_strips(gbase, box, coords, dst, what)
        else:
            offsets, first, me = self._group_ranks(collective_axes)
            strips = self._swizzled_strips(gbase, box, coords, dst, what, len(offsets), me)
            with self.ctx:
                i16 = ir.IntegerType.get_signless(16)
                mask = self.op("arith.shli", [self.op("arith.constant", results=[i16], attrs={
                    "value": ir.IntegerAttr.get(i16, sum(1 << o for o in offsets))}),
                    self.op("arith.index_cast", [first], [i16])], [i16])
        self._written(_base_norm(dst)[0])
        bars, bidx = self._barrier(barrier)
        nbytes = math.prod(box) * gbase.dtype.itemsize
        with self.when(self.elected):
            self.op("ember_gpu.barrier_arrive", [bars, bidx, self.i32(nbytes)],
                    attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                        [1, 1, 1, 0], context=self.ctx)})
            for desc, cs, view in strips:
                self._copy_op(desc, cs, view, bars, bidx, mask)

    def _copy_op(self, desc, coords, smem, bars, bidx, multicast, tracked_by=None):
        extra = [x for x in (multicast, tracked_by) if x is not None]
        self.op("ember_gpu.copy_gmem_to_smem", [desc, *coords, smem, bars, bidx, *extra],
                attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                    [1, len(coords), 1, 1, 1, int(multicast is not None),
                     int(tracked_by is not None)], context=self.ctx)})

    def _leader_tracked_copy(self, src, dst, barrier, collective_axes, partition, what):
        """A copy of a 2-CTA pair whose completion the pair's leader tracks
        (`leader_tracked=CopyPartition.PARTITIONED(axis)`): block i of the
        pair copies the i-th half of `src` along `axis` into its own `dst`,
        its bytes counted on the leader's `barrier`, on which the leader
        expects both halves (cta_group::2 copies; a collective MMA's
        operands)."""
        if partition.axis is None:
            raise _unsupported(f"{what} with leader_tracked=CopyPartition.REPLICATED")
        if collective_axes is None:
            raise ValueError(f"{what}: leader_tracked needs collective_axes "
                             f"(at {core.where()})")
        axes = (collective_axes,) if isinstance(collective_axes, str) else \
            tuple(collective_axes)
        offsets, first, me = self._group_ranks(axes)
        if len(offsets) != 2:
            raise _unsupported(f"{what} with leader_tracked over {len(offsets)} blocks (a "
                               f"2-CTA pair's)")
        axis = partition.axis
        shape = src.shape
        if not 0 <= axis < len(shape) or shape[axis] % 2 or \
                shape[axis] // 2 != dst.shape[axis]:
            raise ValueError(f"{what}: a source of shape {tuple(shape)} does not split in two "
                             f"along axis {axis} into a destination of shape "
                             f"{tuple(dst.shape)} (at {core.where()})")
        half = shape[axis] // 2
        start = self.scalar_tracer(self.arith("muli", me, half))
        idx = (slice(None),) * axis + (state.Slice(start, half, 1),)
        part = _KView(_base_norm(src)[0], src.compose(idx, "ref.at"))
        if _base_norm(dst)[0].swizzled is not None:
            gbase, box, coords = self._gmem_box(part, what)
            strips = self._swizzled_strips(gbase, box, coords, dst, what)
            sbase = _base_norm(dst)[0]
        else:
            gbase, box, coords, sbase, soffset = self._tma_box(part, dst, what)
            strips = [(self._descriptor(gbase, box), [self.i32(self.index(c)) for c in coords],
                       self._smem_view(sbase, soffset, box))]
        self._written(sbase)
        bars, bidx = self._barrier(barrier)
        nbytes = 2 * math.prod(box) * gbase.dtype.itemsize
        leader = self.i32(first)
        with self.ctx:
            leads = self.op("arith.andi", [self.elected, self.cmp_eq(me, 0)],
                            [ir.IntegerType.get_signless(1)])
        with self.when(leads):
            self.op("ember_gpu.barrier_arrive", [bars, bidx, self.i32(nbytes)],
                    attrs={"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                        [1, 1, 1, 0], context=self.ctx)})
        with self.when(self.elected):
            for desc, cs, view in strips:
                self._copy_op(desc, cs, view, bars, bidx, None, leader)

    def barrier_wait(self, barrier):
        bars, bidx = self._barrier(barrier)
        with self.ctx:
            i32 = ir.IntegerType.get_signless(32)
            word = self.op("memref.load", [barrier.phases, bidx], [i32])
            self.op("ember_gpu.barrier_wait", [bars, bidx, word])
            one = self.i32(1)
            self.op("memref.store", [self.op("arith.xori", [word, one], [i32]),
                                     barrier.phases, bidx])

    def barrier_arrive(self, barrier):
        bars, bidx = self._barrier(barrier)
        # The warpgroup's threads are done with what the arrival releases.
        self._warpgroup_sync()
        seg = ir.DenseI32ArrayAttr.get
        with self.when(self.elected):
            if hasattr(barrier.kind, "collective_axes"):  # a ClusterBarrier
                offsets, first, _ = self._group_ranks(barrier.kind.collective_axes)
                for o in offsets:
                    peer = self.i32(self.arith("addi", first, o))
                    self.op("ember_gpu.barrier_arrive", [bars, bidx, peer],
                            attrs={"operandSegmentSizes": seg([1, 1, 0, 1], context=self.ctx)})
            else:
                self.op("ember_gpu.barrier_arrive", [bars, bidx],
                        attrs={"operandSegmentSizes": seg([1, 1, 0, 0], context=self.ctx)})

    def commit_smem(self):
        self.op("ember_gpu.commit_smem")
        self._warpgroup_sync()

    def copy_smem_to_gmem(self, src, dst, predicate=None, reduction_op=None):
        what = "copy_smem_to_gmem"
        if reduction_op is not None:
            raise _unsupported(f"{what} with reduction_op")
        if _base_norm(src)[0].swizzled is not None:
            # One copy (and bulk group) per strip: waiting for N groups
            # waits for at least N copies.
            gbase, box, coords = self._gmem_box(dst, what)
            copies = self._swizzled_strips(gbase, box, coords, src, what)
        else:
            gbase, box, coords, sbase, soffset = self._tma_box(dst, src, what)
            copies = [(self._descriptor(gbase, box), [self.i32(self.index(c)) for c in coords],
                       self._smem_view(sbase, soffset, box))]
        self._written(gbase)
        cond = self.elected
        if predicate is not None:
            p = self._predicate(core.as_value(predicate))
            cond = self.op("arith.andi", [cond, p], [cond.type])
        with self.when(cond):
            for desc, coords, smem in copies:
                self.op("ember_gpu.copy_smem_to_gmem", [smem, desc, *coords])

    def wait_smem_to_gmem(self, n, wait_read_only=False):
        with self.when(self.elected):
            attrs = {"allow_in_flight": ir.IntegerAttr.get(
                ir.IntegerType.get_signless(32, context=self.ctx), int(n))}
            if wait_read_only:
                attrs["read"] = ir.UnitAttr.get(self.ctx)
            self.op("ember_gpu.wait_smem_to_gmem", attrs=attrs)
        self._warpgroup_sync()

    def register_split(self, memory_registers, num_compute_wgs):
        """(registers per thread of a warp-specialized kernel's memory
        warpgroup, of each compute warpgroup), or (None, None) to leave the
        allocation alone. A block's 64K registers are 512 per thread slot
        of a warpgroup; what the memory group gives up goes to the compute
        groups, in steps of 8 (setmaxnreg's granule) up to 256."""
        if memory_registers is None:
            return None, None
        mem = int(memory_registers)
        if mem % 8 or not 24 <= mem <= 256:
            raise ValueError(f"memory_registers must be a multiple of 8 from 24 to 256, got "
                             f"{mem} (at {core.where()})")
        compute = min(256, (512 - mem) // max(int(num_compute_wgs), 1) // 8 * 8)
        return mem, compute

    def set_max_registers(self, count, increase):
        """setmaxnreg: the warpgroup's threads now hold `count` registers."""
        with self.ctx:
            self.op("nvvm.setmaxregister", attrs={
                "regCount": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), count),
                "action": ir.Attribute.parse(
                    f"#nvvm<action {'increase' if increase else 'decrease'}>")})

    def run_when(self, condition, f):
        """`pl.when`: `f`'s ops under an scf.if."""
        c = core.as_value(condition)
        if c.shape != ():
            raise TypeError(f"pl.when: the condition must be a scalar, got "
                            f"{c.aval.str_short()} (at {core.where()})")
        with self.when(self._predicate(c)):
            f()

    def _predicate(self, c):
        """An i1 from a traced scalar (booleans are bytes once lowered: the
        value crosses as an int32)."""
        from ..numpy import lax_numpy as jnp

        v = self.trace.to_value(jnp.asarray(c != 0 if c.dtype != np.bool_ else c, np.int32))
        with self.ctx:
            i32 = ir.IntegerType.get_signless(32)
            x = self.op("tensor.extract", [v], [i32])
            return self.op("arith.cmpi", [x, self.i32(0)], [ir.IntegerType.get_signless(1)],
                           {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)})

    def run_loop(self, lower, upper, step, body):
        """`pl.loop`: `body(i)` in an scf.for (i an int32 scalar)."""
        lo, hi, st = self.index(lower), self.index(upper), self.index(step)
        with self.ctx, self.trace.location():
            o = ir.Operation.create("scf.for", results=[], operands=[lo, hi, st], regions=1,
                                    ip=ir.InsertionPoint(self.trace.block))
            block = o.regions[0].blocks.append(ir.IndexType.get())
        with self._at(block), self._loop_body():
            body(self.scalar_tracer(block.arguments[0]))
            self.op("scf.yield")

    def axis_index(self, name):
        if name not in self.coords:
            return None
        return self.scalar_tracer(self.coords[name])

    def grid_env(self):
        return (tuple(self.scalar_tracer(self.coords[n]) for n in self.grid_names), self.grid)

    # -- driving -------------------------------------------------------------

    def run(self, body, in_avals, out_avals, scratch_names):
        self.trace = _KernelTrace(self, self.block)
        core._trace_stack.append(self.trace)
        _local.compiler = self
        try:
            with self.ctx, ir.Location.unknown(self.ctx):
                self._run_body(body, in_avals, out_avals, scratch_names)
        finally:
            _local.compiler = None
            core._trace_stack.pop()
        self._verify()
        with self.ctx:
            i64 = ir.IntegerType.get_signless(64)
            if self.cluster:
                c = list(self.cluster) + [1] * (3 - len(self.cluster))
                self.module.operation.attributes["ember_gpu.cluster"] = \
                    ir.DenseI32ArrayAttr.get(c)
            a = self.stage_align  # parts stay aligned
            stride = -(-self.dyn_bytes // a) * a
            shared = -(-self.shared_bytes // a) * a
            self.stage_stride.owner.attributes["value"] = ir.IntegerAttr.get(
                ir.IndexType.get(), stride)
            self.shared_size.owner.attributes["value"] = ir.IntegerAttr.get(
                ir.IndexType.get(), shared)
            total = max(16, shared + stride * self.nthreads)
            scratch = 0
            for w in self.workgroup:
                if w is not None:
                    t = ir.MemRefType(w.type)
                    nbytes = math.prod(t.shape) * _dtype_of(t.element_type).itemsize
                    scratch += -(-nbytes // 1024) * 1024
            if total + scratch > SMEM_LIMIT:
                raise _unsupported(
                    f"{total + scratch} bytes of shared memory ({scratch} of scratch buffers, "
                    f"{total} staged by the kernel; a block has {SMEM_LIMIT})")
            self.stage_area.set_type(ir.MemRefType.get(
                [total], ir.IntegerType.get_signless(8), None,
                ir.Attribute.parse("#gpu.address_space<workgroup>"),
                loc=ir.Location.unknown(self.ctx)))
            self._dynamic_shared_memory()
            self.module.operation.attributes["ember_gpu.tma_descriptors"] = ir.ArrayAttr.get([
                ir.DictAttr.get({
                    "operand": ir.IntegerAttr.get(i64, op),
                    "box": ir.DenseI64ArrayAttr.get(list(box)),
                    "dtype": ir.StringAttr.get(str(dt)),
                    "swizzle": ir.IntegerAttr.get(i64, sw)})
                for op, box, dt, sw in self.descriptors])
        return self.module

    def _dynamic_shared_memory(self):
        """The launch's shared buffers (its workgroup attributions: scratch,
        barriers, the TMEM address word, the staging area) become views of
        its dynamic shared memory, each 1024-byte aligned (TMA's swizzled
        copies and wgmma's descriptors need it), the first aligned at run
        time; the launch asks for their size. Static shared memory is
        limited to 48 KB a block; dynamic shared memory takes a block's
        whole share (the runtime opts in above 48 KB)."""
        i8 = ir.IntegerType.get_signless(8)
        index = ir.IndexType.get()
        wg = ir.Attribute.parse("#gpu.address_space<workgroup>")
        first = len(self.block.arguments) - int(
            ir.IntegerAttr(self.launch_op.attributes["workgroup_attributions"]).value)
        args = list(self.block.arguments)[first:]
        ip = ir.InsertionPoint.at_block_begin(self.block)
        loc = ir.Location.unknown(self.ctx)

        def make(name, operands, result, attrs=None):
            return ir.Operation.create(name, results=[result], operands=operands,
                                       attributes=attrs or {}, ip=ip, loc=loc).results[0]

        def const(v):
            return make("arith.constant", [], index, {"value": ir.IntegerAttr.get(index, v)})

        dyn = make("gpu.dynamic_shared_memory", [],
                   ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], i8, None, wg,
                                     loc=loc))
        base = make("memref.extract_aligned_pointer_as_index", [dyn], index)
        # (-base) mod 1024: the padding to the first 1024-byte boundary.
        pad = make("arith.andi", [make("arith.subi", [const(0), base], index), const(1023)],
                   index)
        offset = 0
        for arg in args:
            t = ir.MemRefType(arg.type)
            nbytes = math.prod(t.shape) * _dtype_of(t.element_type).itemsize
            at = make("arith.addi", [pad, const(offset)], index)
            view = make("memref.view", [dyn, at], t)
            arg.replace_all_uses_with(view)
            offset += -(-nbytes // 1024) * 1024
        if offset + 1024 > SMEM_LIMIT:
            raise _unsupported(f"{offset + 1024} bytes of shared memory (its buffers each "
                               f"aligned to 1024 bytes; a block has {SMEM_LIMIT})")
        for i in reversed(range(first, first + len(args))):
            self.block.erase_argument(i)
        self.launch_op.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), 0)
        self.smem_size.attributes["value"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), offset + 1024)

    def _verify(self):
        """The kernel form is valid IR; a value used outside the loop or
        conditional that computed it (Python lets a kernel body keep one)
        is the user's error, at its line."""
        from ..errors import EmberInternalError

        try:
            self.module.operation.verify()
        except ir.MLIRError as e:
            diags = e.error_diagnostics
            where = str(diags[0].location) if diags else "?"
            if "dominate" in str(e) or any("dominate" in d.message for d in diags):
                raise ValueError(
                    f"plgpu kernel: a value computed inside a loop or conditional (pl.loop, "
                    f"pl.when, lax.fori_loop/while_loop/cond) is used outside it "
                    f"(at {where})") from None
            raise EmberInternalError(
                f"compiling a plgpu kernel built invalid IR (a bug in Ember): {e}") from None

    def _run_body(self, body, in_avals, out_avals, scratch_names):
        self._prologue()
        with self.ctx:
            # Device allocations are at least 16-byte aligned: LLVM may then
            # merge a run's loads and stores into vector accesses.
            aligned = [self.op("memref.assume_alignment", [a], [a.type], {
                "alignment": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 16)})
                for a in self.args]
        refs = [_KRef(self, a, av.shape, av.dtype, "GMEM", i)
                for i, (a, av) in enumerate(zip(aligned, (*in_avals, *out_avals)))]
        scratch_refs = []
        for t, w in zip(self.scratch_kinds, self.workgroup):
            if hasattr(t, "num_arrivals"):
                with self.ctx:
                    i32 = ir.IntegerType.get_signless(32)
                    ptype = ir.MemRefType.get([t.num_barriers], i32)
                    phases = self.op("memref.alloca", results=[ptype], attrs={
                        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])})
                    zero = self.i32(0)
                    for i in range(t.num_barriers):
                        self.op("memref.store", [zero, phases, self.index(i)])
                scratch_refs.append(_KBarrier(t, w, phases))
            elif type(t).__name__ == "TMEM":
                scratch_refs.append(_KTmem(self, self.tmem_offsets.pop(0), t.shape, t.dtype,
                                               t.collective))
            elif w is None:
                scratch_refs.append(_KAcc(self, t.shape, t.dtype))
            else:
                scratch_refs.append(_KRef(self, w, t.shape, t.dtype, "SMEM", swizzled=_swizzle_of(
                    getattr(t, "transforms", ()), t.shape, t.dtype, self.infer_transforms)))
        if scratch_names is not None:
            res = body(*refs, **dict(zip(scratch_names, scratch_refs)))
        else:
            res = body(*refs, *scratch_refs)
        if res is not None:
            raise ValueError("a plgpu kernel body must return None")
        if self.cluster:
            # No block leaves while a peer may still arrive on its barriers
            # or multicast into its SMEM.
            self.op("ember_gpu.cluster_arrive")
            self.op("ember_gpu.cluster_wait")
        if self.tmem_columns:
            # Every thread is done with TMEM before the warp frees it.
            self.op("ember_gpu.tcgen05_fence")
            self._block_sync()
            self.op("ember_gpu.tcgen05_fence", attrs={"after": ir.UnitAttr.get(self.ctx)})
            with self.when(self._first_warp()), self.ctx:
                self.op("ember_gpu.tmem_dealloc", [self.tmem_base], attrs={
                    "columns": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                  self.tmem_columns),
                    **self._collective_attr()})
        self.op("gpu.terminator")


class CompiledKernel:
    """`plgpu.kernel(...).lower(*args)`: the kernel compiled for an NVIDIA
    GPU (`chip`, default the cuda target's). `as_text(stage)` shows it:
    "kernel" (a host function whose gpu.launch holds the body: ember ops on
    per-thread values and ember_gpu ops), "loops" (bufferized and outlined
    into a gpu.module), "nvvm", "binary" or "ptx". `tma_descriptors` lists
    the TMA descriptors the kernel reads from its last parameter, 128 bytes
    each: (operand number, box shape, dtype); `grid`, `cluster` and `block`
    give the launch's shape (blocks, blocks per cluster, threads)."""

    def __init__(self, module, name, chip, descriptors, grid, cluster, block):
        self.name = name  # the gpu.module's (and kernel's) name
        self._texts = {"kernel": module.operation.get_asm(enable_debug_info=False)}
        # Between stages the text keeps the kernel's lines, in generic form
        # (some NVVM ops' custom syntax does not reparse location aliases).
        self._with_locs = module.operation.get_asm(enable_debug_info=True,
                                                   print_generic_op_form=True)
        self.chip, self.tma_descriptors = chip, descriptors
        self.grid, self.cluster, self.block = grid, cluster, block

    def _run(self, text, pipeline):
        with context():
            module = ir.Module.parse(text)
            try:
                PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
            except ir.MLIRError as e:
                raise cuda.kernel_pipeline_error(e) from None
            return module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)

    def _stage(self, stage):
        from ..targets import cuda

        if stage in self._texts:
            return self._texts[stage]
        opts = cuda.options(self.chip)
        if stage == "loops":
            with context():
                text = cuda.outline(self._with_locs).operation.get_asm(
                    enable_debug_info=True, print_generic_op_form=True)
        elif stage == "nvvm":
            text = self._run(self._stage("loops"), f"ember-cuda-nvvm{{{opts}}}")
        elif stage == "binary":
            text = self._run(self._stage("nvvm"), f"ember-cuda-binary{{{opts}}}")
        elif stage == "ptx":
            text = cuda.ptx_of(self.as_text("binary"))
        else:
            raise ValueError(f"unknown stage {stage!r}: kernel, loops, nvvm, binary or ptx")
        self._texts[stage] = text
        return text

    def kernel_text(self):
        """The kernel form with its locations (generic form), what
        `outline` takes."""
        return self._with_locs

    def as_text(self, stage="kernel"):
        text = self._stage(stage)
        if stage in ("loops", "nvvm", "binary"):
            with context():
                text = ir.Module.parse(text).operation.get_asm(enable_debug_info=False)
        return text


def compile_kernel(body, in_avals, out_avals, scratch, grid, grid_names, cluster,
                   cluster_names, nthreads, thread_name, name="plgpu_kernel",
                   infer_transforms=False):
    """The kernel as a module holding one gpu.module (the kernel form:
    ember ops on per-thread values and ember_gpu ops)."""
    from .. import tree_util

    names = list(scratch) if isinstance(scratch, dict) else None
    flat = (list(scratch.values()) if names is not None else
            list(scratch) if isinstance(scratch, (list, tuple)) else [scratch])
    # Scratch types given as pytrees (tuples of types, None for nothing):
    # the kernel's buffers are the types, the body gets them in the tree.
    trees = [tree_util.tree_structure(t, is_leaf=_is_scratch_type) for t in flat]
    if any(tr.num_nodes != 1 for tr in trees):
        leaves = [tree_util.tree_leaves(t, is_leaf=_is_scratch_type) for t in flat]
        counts, inner, n_ops = [len(x) for x in leaves], body, len(in_avals) + len(out_avals)

        def body(*refs, **kw):
            args, k = list(refs[:n_ops]), n_ops
            for tr, n in zip(trees, counts):
                args.append(tree_util.tree_unflatten(tr, refs[k:k + n]))
                k += n
            if names is not None:
                return inner(*refs[:n_ops], **dict(zip(names, args[n_ops:])))
            return inner(*args)

        flat, names = [x for group in leaves for x in group], None
    kc = KernelCompiler(name, in_avals, out_avals, flat, grid, grid_names, cluster,
                        cluster_names, nthreads, thread_name, infer_transforms)
    module = kc.run(body, in_avals, out_avals, names)
    return module, kc


def _is_scratch_type(t):
    return t is not None and not isinstance(t, (tuple, list, dict))


def lower(body, in_avals, out_avals, scratch, grid, grid_names, cluster, cluster_names,
          nthreads, thread_name, chip=None, name=None, infer_transforms=False):
    name = name or getattr(body, "__name__", "")
    name = name if name.isidentifier() and not name.startswith("_") else "plgpu_kernel"
    module, kc = compile_kernel(body, in_avals, out_avals, scratch, grid, grid_names, cluster,
                                cluster_names, nthreads, thread_name, name, infer_transforms)
    return CompiledKernel(module, name, chip, list(kc.descriptors), tuple(kc.blocks),
                          tuple(kc.cluster), (WARPGROUP * nthreads, 1, 1))
