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

import numpy as np

from .. import core, state
from ..context import context
from ..numpy import lax_numpy as jnp

_SPACES = {"VMEM": "vmem", "SMEM": "smem", "ANY": "any", "HBM": "hbm"}


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
        if b.whole and b.index_map is not None or any(b.element):
            raise NotImplementedError(
                "lowering a Pallas kernel for TPU: Element block dimensions and buffers in "
                "pl.ANY are not supported yet")
    blocks = in_blocks + out_blocks
    block_avals = [core.ShapedArray(b.kernel_shape, b.dtype) for b in blocks]
    for t in scratch_types:
        if not hasattr(t, "memory_space") or t.shape is None:
            raise NotImplementedError(
                f"lowering a Pallas kernel for TPU: scratch {t!r} (semaphores) is not "
                "supported yet")
    scratch_avals = [core.ShapedArray(tuple(t.shape), t.dtype) for t in scratch_types]
    npf, nin, nout = len(prefetch), len(in_blocks), len(out_blocks)

    def body(*args):
        ids = args[:len(grid)]
        refs = [state.Ref(a) for a in args[len(grid):]]
        grid_env.append((tuple(ids), grid))
        try:
            with state.scope(refs):
                kernel(*refs)
        finally:
            grid_env.pop()
        return [r._value for r in refs[npf + nin:]]

    keep = []
    fn, _ = _trace(body, grid_avals + pf_avals + block_avals + scratch_avals, keep)
    windows, transforms = [], []
    for k, b in enumerate(blocks):
        if not grid:
            break
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
        windows.append(entry)

    with context():
        m = ir_module()
        _add(m, fn, kname)
        fn.attributes["ember_tpu.grid_args"] = _i64(len(grid))
        spaces = (["smem"] * npf + [_space(getattr(b, "memory_space", None)) for b in blocks]
                  + [_space(getattr(t, "memory_space", None)) for t in scratch_types])
        fn.attributes["ember_tpu.arg_spaces"] = _parse(
            "[" + ", ".join(f"#ember_tpu.memory_space<{s}>" for s in spaces) + "]")
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
        fn.attributes["scalar_prefetch"] = _i64(npf)
        fn.attributes["scratch_operands"] = _i64(len(scratch_types))
        fn.attributes["ember_tpu.core_type"] = _parse("#ember_tpu.core_type<tc>")
        for name, tfn in transforms:
            _add(m, tfn, name)
            tfn.attributes["ember_tpu.grid_args"] = _i64(len(grid))
            tfn.attributes["ember_tpu.arg_spaces"] = _parse(
                "[" + ", ".join(["#ember_tpu.memory_space<smem>"] * npf) + "]")
        return str(m)


def _window(w):
    parts = []
    if "pipeline_mode" in w:
        parts.append(f"pipeline_mode = #ember_tpu.pipeline_mode<{w['pipeline_mode']}>")
    if "transform_indices" in w:
        parts.append(f"transform_indices = @{w['transform_indices']}")
    parts.append("window_bounds = array<i64: " + ", ".join(str(n) for n in w["window_bounds"])
                 + ">")
    return "{" + ", ".join(parts) + "}"


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
