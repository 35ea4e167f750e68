"""A `pallas_call`'s kernel in the `ember_tpu` form (before conversion), the
input of `ember-tpu-kernel` (targets/tpu.py turns it into a Mosaic custom
call).

The kernel is traced once more, apart from its interpreter: as a function of
the grid indices (0-d int32) and of the values of its buffers (scalar-
prefetch operands whole, then the input, output and scratch blocks) that
returns the outputs' and scratch buffers' final values. Each block index
map is traced the same way (grid indices and prefetch operands in, block
indices out). The functions carry the attributes Mosaic reads on a kernel:
`window_params`, `iteration_bounds`, `dimension_semantics`,
`scalar_prefetch`, `scratch_operands` and the core type.
"""

import threading

import numpy as np

from .. import core, lax, state
from ..context import context
from ..numpy import lax_numpy as jnp
from .pipeline_mode import Buffered, RevisitMode

_SPACES = {"VMEM": "vmem", "SMEM": "smem", "ANY": "any", "HBM": "hbm",
           "SEMAPHORE": "semaphore_mem"}

# Whether a kernel is being traced for the TPU target (DMAs become
# `ember_tpu.traced_dma_*` ops instead of copies), per thread.
_state = threading.local()


def tracing():
    return getattr(_state, "depth", 0) > 0


def _dma_end(ref, what):
    """(buffer number, starts, sizes, squeezed dimensions) of a DMA end."""
    if isinstance(ref, state.RefView):
        base, norm = ref.base, ref.norm
    else:
        base, norm = ref, [("ds", state.Slice(0, n)) for n in ref.shape]
    k = getattr(base, "_tpu_buffer", None)
    if k is None:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: the {what} of a DMA must be a kernel operand "
            f"or scratch buffer (or a window of one) (at {core.where()})")
    starts, sizes, squeezed = [], [], []
    for d, (kind, sl) in enumerate(norm):
        if kind == "ds":
            if sl.stride != 1:
                raise NotImplementedError(
                    f"lowering a Pallas kernel for TPU: strided DMA windows (at {core.where()})")
            starts.append(sl.start)
            sizes.append(sl.size)
        elif kind == "at":
            starts.append(sl)
            sizes.append(1)
            squeezed.append(d)
        else:
            raise NotImplementedError(
                f"lowering a Pallas kernel for TPU: DMA windows by index arrays "
                f"(at {core.where()})")
    starts = [core.as_value(jnp.asarray(x, np.int32)) for x in starts]
    return base, k, starts, sizes, squeezed


def device_index(device_id, device_id_type):
    """(device, core) a remote DMA or signal targets, each a 0-d int32 or
    None (this one): a logical id, mesh coordinates (one shard_map axis,
    whose stride is 1), or a dict naming mesh axes, among them the core
    axis of a core_map kernel (its TensorCore: Mosaic's `core_id`)."""
    from .. import parallel

    def as_i32(v):
        return core.as_value(jnp.asarray(v, np.int32))

    kind = getattr(device_id_type, "value", device_id_type)
    core_id = None
    if isinstance(device_id, dict):
        device_id = dict(device_id)
        cores = [a for a in device_id if a in parallel._env.kernel_axes]
        if len(cores) > 1:
            raise ValueError(f"device_id {device_id!r} names {len(cores)} core axes (at "
                             f"{core.where()})")
        if cores:
            core_id = as_i32(device_id.pop(cores[0]))
        if not device_id:
            return None, core_id
        if len(device_id) != 1:
            raise NotImplementedError(
                f"lowering a Pallas kernel for TPU: remote DMAs and semaphores naming "
                f"{len(device_id)} mesh axes (at {core.where()})")
        device_id = next(iter(device_id.values()))
        kind = "mesh"
    if str(kind).lower().endswith("mesh"):
        if len(parallel._env.frames) != 1:
            raise NotImplementedError(
                f"lowering a Pallas kernel for TPU: remote DMAs and semaphores with mesh "
                f"coordinates under shard_map over one mesh axis only (at {core.where()})")
        if isinstance(device_id, (tuple, list)):
            if len(device_id) != 1:
                raise ValueError(f"device_id {device_id!r} must have one coordinate per mesh "
                                 f"axis (at {core.where()})")
            device_id = device_id[0]
    elif isinstance(device_id, (tuple, list)):
        raise ValueError(f"a logical device_id is one id, got {device_id!r} "
                         f"(at {core.where()})")
    return as_i32(device_id), core_id


def semaphore(kind, sem, amount=None, target=(None, None)):
    """A regular semaphore's signal, wait or read as a traced op (see
    `ember_tpu.traced_sem_*`); a read returns the count. A signal with a
    `target` (device, core) (`device_index`) signals that semaphore."""
    from ..._mlir import ir

    _, mi, m_starts, _, _ = _dma_end(sem, "semaphore")
    trace = core.current_trace()
    with context():
        attrs = {"sem_buffer": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), mi)}
        if kind == "signal":
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(
                [1, len(m_starts)] + [0 if t is None else 1 for t in target])
    operands = m_starts if amount is None else [
        core.as_value(jnp.asarray(amount, np.int32)), *m_starts]
    operands += [t for t in target if t is not None]
    vals = [trace.to_value(v) for v in operands]
    results = [core.ShapedArray((), np.int32)] if kind == "read" else []
    outs = trace.emit(f"ember_tpu.traced_sem_{kind}", vals, results, attrs)
    return outs[0] if kind == "read" else None


def prng_seed(seeds):
    """`pltpu.prng_seed` in a kernel traced for the TPU target: an
    `ember_tpu.traced_prng_seed` of the seeds (0-d int32 values)."""
    trace = core.current_trace()
    trace.emit("ember_tpu.traced_prng_seed", [trace.to_value(s) for s in seeds], [], {})


def prng_random_bits(shape):
    """`pltpu.prng_random_bits` in a kernel traced for the TPU target (rank
    2 or more, as Mosaic's op takes)."""
    if len(shape) < 2:
        raise NotImplementedError(f"pltpu.prng_random_bits in a kernel lowered for TPU: "
                                  f"random bits of rank 2 or more, not {shape} (Mosaic's "
                                  f"prng_random_bits) (at {core.where()})")
    out, = core.current_trace().emit("ember_tpu.traced_prng_random_bits", [],
                                     [core.ShapedArray(tuple(shape), np.dtype(np.int32))], {})
    return out


def rotate(x, shift, axis, stride, stride_axis):
    """`pltpu.roll` in a kernel traced for the TPU target: an
    `ember_tpu.traced_rotate` (Mosaic's `dynamic_rotate`, as JAX lowers it)."""
    from ..._mlir import ir

    trace = core.current_trace()
    with context():
        si32 = ir.IntegerType.get_signed(32)
        attrs = {"dimension": ir.IntegerAttr.get(si32, axis)}
        if stride is not None:
            attrs["stride"] = ir.IntegerAttr.get(si32, stride)
            attrs["stride_dimension"] = ir.IntegerAttr.get(si32, stride_axis)
    amount = core.as_value(jnp.asarray(shift, np.int32))
    out, = trace.emit("ember_tpu.traced_rotate", [trace.to_value(x), trace.to_value(amount)],
                      [x.aval], attrs)
    return out


def _traced_alloc(shape, dtype, space, flag=None):
    """A `traced_alloc` of a buffer numbered after the kernel's others (a
    Ref of it); `flag` names a unit attribute (`dma_semaphore`, `barrier`)."""
    from ..._mlir import ir

    k = _state.next_buffer
    _state.next_buffer += 1
    with context():
        attrs = {"buffer": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k),
                 "memory_space": _parse(f"#ember_tpu.memory_space<{space}>")}
        if flag is not None:
            attrs[flag] = ir.UnitAttr.get()
    out, = core.current_trace().emit("ember_tpu.traced_alloc", [],
                                     [core.ShapedArray(tuple(shape), np.dtype(dtype))], attrs)
    ref = state.Ref(out)
    ref._tpu_buffer = k
    return ref


def barrier_semaphore():
    """`pltpu.get_barrier_semaphore()` in a kernel traced for the TPU target:
    a `traced_alloc` marked `barrier` (Mosaic's `sem_barrier`), one per
    kernel; the kernel needs a `collective_id` (JAX's rule)."""
    if getattr(_state, "barrier", None) is None:
        if getattr(_state, "collective_id", None) is None:
            raise ValueError(
                f"pltpu.get_barrier_semaphore needs the kernel's collective_id: pass "
                f"compiler_params=pltpu.CompilerParams(collective_id=...) (at {core.where()})")
        _state.barrier = _traced_alloc((), np.int32, "semaphore_mem", "barrier")
    return _state.barrier


def scoped(t):
    """A `pl.run_scoped` buffer of scratch type `t` in a kernel traced for
    the TPU target: an `ember_tpu.traced_alloc` (the buffer's undefined
    first value), numbered after the kernel's other buffers, which
    `ember-tpu-kernel` allocates in Mosaic's `region`."""
    kind = getattr(t, "semaphore_kind", None)
    if kind not in (None, "DMA", "REGULAR"):
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: {kind.lower()} semaphores in run_scoped "
            f"(at {core.where()})")
    if not hasattr(t, "memory_space") or t.shape is None:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: run_scoped of {t!r} (at {core.where()})")
    space = _space(t.memory_space)
    if space not in ("vmem", "smem", "semaphore_mem"):
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: run_scoped buffers in {space} (scoped "
            f"buffers are in VMEM, SMEM or semaphore memory) (at {core.where()})")
    return _traced_alloc(t.shape, t.dtype, space, "dma_semaphore" if kind == "DMA" else None)


def dma(desc, kind):
    """A DMA's start or wait as a traced op (see `ember_tpu.traced_dma_*`):
    after the wait, the destination buffer's value is what the copy left.
    A remote copy's descriptor has `send_sem` and `device` (the target's
    logical id); `kind` "wait_send" waits for its source to be read."""
    from ..._mlir import ir

    remote = getattr(desc, "send_sem", None) is not None
    if desc.sem is None:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: a DMA without a semaphore (sync_copy) "
            f"(at {core.where()})")
    if desc.add:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: DMAs that add (at {core.where()})")
    src, si, s_starts, s_sizes, s_sq = _dma_end(desc.src, "source")
    dst, di, d_starts, d_sizes, d_sq = _dma_end(desc.dst, "destination")
    sem = desc.send_sem if kind == "wait_send" else desc.sem
    _, mi, m_starts, _, _ = _dma_end(sem, "semaphore")
    send_starts, send_buffer = [], None
    if remote and kind == "start":
        _, send_buffer, send_starts, _, _ = _dma_end(desc.send_sem, "send semaphore")
    # (The target's device and core, each when given.)
    target = ([t for t in getattr(desc, "target", (None, None)) if t is not None]
              if remote and kind != "wait_send" else [])
    target_sizes = ([0 if t is None else 1 for t in desc.target]
                    if remote and kind != "wait_send" else [0, 0])
    trace = core.current_trace()
    with context():
        i64 = ir.IntegerType.get_signless(64)
        attrs = {
            "src_buffer": ir.IntegerAttr.get(i64, si),
            "dst_buffer": ir.IntegerAttr.get(i64, di),
            "sem_buffer": ir.IntegerAttr.get(i64, mi),
            "src_sizes": ir.DenseI64ArrayAttr.get(s_sizes),
            "dst_sizes": ir.DenseI64ArrayAttr.get(d_sizes),
            "src_squeezed": ir.DenseI64ArrayAttr.get(s_sq),
            "dst_squeezed": ir.DenseI64ArrayAttr.get(d_sq),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                [1, 1, len(s_starts), len(d_starts), len(m_starts), len(send_starts),
                 *target_sizes]),
        }
        if send_buffer is not None:
            attrs["src_sem_buffer"] = ir.IntegerAttr.get(i64, send_buffer)
        if kind == "wait_send":
            attrs["send"] = ir.UnitAttr.get()
    operands = [src._value, dst._value, *s_starts, *d_starts, *m_starts, *send_starts,
                *target]
    vals = [trace.to_value(v) for v in operands]
    results = [dst._value.aval] if kind != "start" else []
    op = "start" if kind == "start" else "wait"
    outs = trace.emit(f"ember_tpu.traced_dma_{op}", vals, results, attrs)
    if kind == "wait":
        dst._value = outs[0]


def _access(kind, ref, norm, value, mask):
    """A read or write of a kernel buffer (state.kernel_access) that Mosaic
    has an op for: a strided window (`pl.ds(start, size, stride)`) read or
    written, or a masked write (`pltpu.store(..., mask=)`), as an
    `ember_tpu.traced_load`/`traced_store` (`strided_load`,
    `strided_store`, a masked `vector_store`, as JAX lowers them); None
    otherwise (the general path: slices, masked reads as a select)."""
    from ..._mlir import ir

    if any(k == "gather" for k, _ in norm):
        return None
    strided = any(k == "ds" and s.stride != 1 for k, s in norm)
    if not strided and (kind == "load" or mask is None):
        return None
    if strided and mask is not None:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: a masked {kind} of a strided window "
            f"(at {core.where()})")
    starts = [core.as_value(jnp.asarray(s if k == "at" else s.start, np.int32))
              for k, s in norm]
    sizes = [1 if k == "at" else s.size for k, s in norm]
    view = [s.size for k, s in norm if k == "ds"]
    trace = core.current_trace()
    with context():
        attrs = {"strides": ir.DenseI32ArrayAttr.get(
            [1 if k == "at" else int(s.stride) for k, s in norm])}
        if kind == "store":
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(
                [1, 1, len(starts), 0 if mask is None else 1])
    buf = ref._value
    if kind == "load":
        out, = trace.emit("ember_tpu.traced_load", [trace.to_value(v) for v in [buf, *starts]],
                          [core.ShapedArray(tuple(sizes), buf.dtype)], attrs)
        return jnp.reshape(out, view)
    operands = [buf, jnp.reshape(value, sizes), *starts]
    if mask is not None:
        operands.append(jnp.reshape(jnp.broadcast_to(jnp.asarray(mask, np.bool_), view), sizes))
    out, = trace.emit("ember_tpu.traced_store", [trace.to_value(core.as_value(v))
                                                 for v in operands], [buf.aval], attrs)
    return out


state.kernel_access = _access


def _space(memory_space, default="vmem"):
    if memory_space is None:
        return default
    name = getattr(memory_space, "name", str(memory_space))
    name = name.rsplit(".", 1)[-1].upper()
    if name not in _SPACES:
        raise NotImplementedError(
            f"lowering a Pallas kernel for TPU: buffers in {memory_space!r} are not supported")
    return _SPACES[name]


def _semantics(compiler_params, ndims):
    sem = getattr(compiler_params, "dimension_semantics", None)
    if sem is None:
        return ["arbitrary"] * ndims
    out = []
    for s in sem:
        s = getattr(s, "name", str(s)).rsplit(".", 1)[-1].lower()
        if s not in ("parallel", "arbitrary", "core_parallel", "subcore_parallel"):
            raise ValueError(f"pallas_call: unknown dimension semantics {s!r}")
        out.append(s)
    if len(out) != ndims:
        raise ValueError(
            f"pallas_call: dimension_semantics has {len(out)} entries for a grid of "
            f"{ndims} dimensions")
    return out


def _trace(fun, avals, keep):
    """The traced function's func.func; its module is appended to `keep`
    (the op lives in it until moved)."""
    module, out_avals = core.trace_function(fun, avals)
    keep.append(module)
    return module.body.operations[0], out_avals


def kernel_module(kernel, kname, grid, grid_env, prefetch, in_blocks, out_blocks,
                  scratch_types, compiler_params):
    """The text of the kernel module (see the module docstring)."""
    i32 = core.ShapedArray((), np.int32)
    grid_avals = [i32] * len(grid)
    pf_avals = [core.ShapedArray(tuple(p.shape), p.dtype) for p in prefetch]
    for b in in_blocks + out_blocks:
        if any(b.element):
            raise NotImplementedError(
                "lowering a Pallas kernel for TPU: Element block dimensions are not "
                "supported yet")
    blocks = in_blocks + out_blocks
    block_avals = [core.ShapedArray(b.kernel_shape, b.dtype) for b in blocks]
    for t in scratch_types:
        if not hasattr(t, "memory_space") or t.shape is None:
            raise NotImplementedError(
                f"lowering a Pallas kernel for TPU: scratch {t!r} is not supported")
        if getattr(t, "semaphore_kind", "DMA") not in ("DMA", "REGULAR"):
            raise NotImplementedError(
                "lowering a Pallas kernel for TPU: barrier semaphores are not supported yet")
    scratch_avals = [core.ShapedArray(tuple(t.shape), t.dtype) for t in scratch_types]
    npf, nin, nout = len(prefetch), len(in_blocks), len(out_blocks)

    def body(*args):
        ids = args[:len(grid)]
        refs = [state.Ref(a) for a in args[len(grid):]]
        for k, r in enumerate(refs):
            r._tpu_buffer = k
        grid_env.append((tuple(ids), grid))
        _state.depth = getattr(_state, "depth", 0) + 1
        # run_scoped buffers (and the barrier semaphore) are numbered after
        # the kernel's own.
        outer = (getattr(_state, "next_buffer", 0), getattr(_state, "barrier", None),
                 getattr(_state, "collective_id", None))
        _state.next_buffer, _state.barrier = len(refs), None
        _state.collective_id = getattr(compiler_params, "collective_id", None)
        lax.kernel_tracing.depth += 1
        try:
            with state.scope(refs):
                kernel(*refs)
        finally:
            lax.kernel_tracing.depth -= 1
            _state.depth -= 1
            _state.next_buffer, _state.barrier, _state.collective_id = outer
            grid_env.pop()
        return [r._value for r in refs[npf + nin:]]

    keep = []
    fn, _ = _trace(body, grid_avals + pf_avals + block_avals + scratch_avals, keep)
    windows, transforms = [], []
    for k, b in enumerate(blocks):
        if not grid:
            break
        if _space(b.memory_space) in ("any", "hbm"):
            windows.append({})  # not windowed: the kernel's DMAs reach it
            continue
        bounds = [1 if s else n for n, s in zip(b.sizes, b.squeeze)]
        entry = {"window_bounds": bounds}
        if b.index_map is not None:
            def index_map(*args, b=b):
                pf_refs = [state.Ref(p) for p in args[len(grid):]]
                with state.scope(pf_refs):
                    idx = b.index_map(*args[:len(grid)], *pf_refs)
                idx = idx if isinstance(idx, (tuple, list)) else (idx,)
                return [jnp.asarray(i, np.int32) for i in idx]

            tfn, _ = _trace(index_map, grid_avals + pf_avals, keep)
            name = f"transform_{k}"
            entry["transform_indices"] = name
            transforms.append((name, tfn))
            # A whole-array block at a constant origin is fetched once.
            if tuple(b.sizes) == b.shape and _returns_zeros(tfn):
                entry["pipeline_mode"] = "synchronous"
        mode = b.pipeline_mode
        if mode is not None and "pipeline_mode" not in entry:
            entry["pipeline_mode"] = _pipeline_mode(mode)
            if mode.revisit is not None:
                entry["revisit_mode"] = mode.revisit.value
        windows.append(entry)

    with context():
        m = ir_module()
        _add(m, fn, kname)
        fn.attributes["ember_tpu.grid_args"] = _i64(len(grid))
        spaces = (["smem"] * npf + [_space(getattr(b, "memory_space", None)) for b in blocks]
                  + [_space(getattr(t, "memory_space", None)) for t in scratch_types])
        fn.attributes["ember_tpu.arg_spaces"] = _parse(
            "[" + ", ".join(f"#ember_tpu.memory_space<{s}>" for s in spaces) + "]")
        dma_sems = [npf + nin + nout + k for k, t in enumerate(scratch_types)
                     if getattr(t, "semaphore_kind", None) == "DMA"]
        if dma_sems:
            fn.attributes["ember_tpu.dma_semaphores"] = _parse(
                "array<i64: " + ", ".join(map(str, dma_sems)) + ">")
        fn.attributes["ember_tpu.result_args"] = _parse(
            "array<i64" + "".join(f", {k}" if i else f": {k}" for i, k in
                                  enumerate(range(npf + nin, npf + nin + nout
                                                  + len(scratch_types)))) + ">"
            if nout + len(scratch_types) else "array<i64>")
        fn.attributes["dimension_semantics"] = _parse(
            "[" + ", ".join(f"#ember_tpu.dimension_semantics<{s}>"
                            for s in _semantics(compiler_params, len(grid))) + "]")
        if grid:
            fn.attributes["iteration_bounds"] = _parse(
                "array<i64: " + ", ".join(str(int(n)) for n in grid) + ">")
            fn.attributes["window_params"] = _parse("[" + ", ".join(
                _window(w) for w in windows) + "]")
        # Squeezed block dimensions (pl.Squeezed / None): buffers with those
        # dimensions of size 1, as JAX lowers them (ember-tpu-kernel).
        squeezed = ([[]] * npf + [[d for d, s in enumerate(b.squeeze) if s]
                                  if _space(b.memory_space) not in ("any", "hbm") else []
                                  for b in blocks] + [[]] * len(scratch_types))
        if any(squeezed):
            fn.attributes["ember_tpu.squeezed_dims"] = _parse("[" + ", ".join(
                "array<i64" + (": " + ", ".join(map(str, d)) if d else "") + ">"
                for d in squeezed) + "]")
        collective = getattr(compiler_params, "collective_id", None)
        if collective is not None:
            # (Read by the custom call's config; not part of the kernel.)
            fn.attributes["ember_tpu.collective_id"] = _i64(int(collective))
        fn.attributes["scalar_prefetch"] = _i64(npf)
        fn.attributes["scratch_operands"] = _i64(len(scratch_types))
        fn.attributes["ember_tpu.core_type"] = _parse("#ember_tpu.core_type<tc>")
        for name, tfn in transforms:
            _add(m, tfn, name)
            tfn.attributes["ember_tpu.grid_args"] = _i64(len(grid))
            tfn.attributes["ember_tpu.arg_spaces"] = _parse(
                "[" + ", ".join(["#ember_tpu.memory_space<smem>"] * npf) + "]")
        # With locations: what cannot be lowered is reported at its line.
        return m.operation.get_asm(enable_debug_info=True)


def _window(w):
    parts = []
    if "pipeline_mode" in w:
        parts.append(f"pipeline_mode = #ember_tpu.pipeline_mode<{w['pipeline_mode']}>")
    if "revisit_mode" in w:
        parts.append(f"revisit_mode = #ember_tpu.revisit_mode<{w['revisit_mode']}>")
    if "transform_indices" in w:
        parts.append(f"transform_indices = @{w['transform_indices']}")
    if "window_bounds" in w:
        parts.append("window_bounds = array<i64: "
                     + ", ".join(str(n) for n in w["window_bounds"]) + ">")
    return "{" + ", ".join(parts) + "}"


class LoweringException(Exception):
    """JAX's `pltpu.LoweringException`: a kernel Mosaic cannot take."""


def _pipeline_mode(mode):
    """A pallas_call block's `pipeline_mode = pl.Buffered(n)` as its window's
    pipeline mode, with JAX's checks."""
    if not isinstance(mode, Buffered):
        raise LoweringException(f"Unsupported pipeline mode: {mode}.")
    if mode.use_lookahead:
        raise NotImplementedError("Lookahead is not supported for XLA pipeline emitter lowering.")
    if not 1 <= mode.buffer_count <= 2:
        raise LoweringException("Only single (1) and double (2) buffering are supported. Got"
                                f" {mode.buffer_count}.")
    if mode.revisit == RevisitMode.ANY and mode.buffer_count > 1:
        raise LoweringException("RevisitMode.ANY is not supported with double buffering.")
    return "synchronous" if mode.buffer_count == 1 else "double_buffered"


def _returns_zeros(fn):
    """Whether a traced index map returns constant zeros only."""
    block = fn.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    for v in ret.operands:
        owner = v.owner
        if not hasattr(owner, "name") or owner.name != "ember.constant":
            return False
        if str(owner.attributes["value"]).split("<", 1)[1].split(">", 1)[0] != "0":
            return False
    return True


def ir_module():
    from ..._mlir import ir

    with ir.Location.unknown():
        return ir.Module.create()


def _add(m, fn, name):
    from ..._mlir import ir

    fn.attributes["sym_name"] = ir.StringAttr.get(name)
    m.body.append(fn)


def _i64(v):
    from ..._mlir import ir

    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _parse(text):
    from ..._mlir import ir

    return ir.Attribute.parse(text)
