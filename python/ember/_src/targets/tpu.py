"""The TPU target: programs as StableHLO whose Pallas kernels are Mosaic
custom calls, the artifact XLA:TPU consumes (nothing here runs on a TPU).

A `pallas_call` traced anywhere records, on the private function that holds
its interpreter, the kernel in the `ember_tpu` form before conversion
(`kernel_module`): the kernel traced as a function of values plus its block
index maps, with the attributes Mosaic reads (grid, dimension semantics,
windows). Lowering for "tpu" translates the program to StableHLO and turns
each call of such a function into `stablehlo.custom_call @tpu_custom_call`
whose backend config carries the kernel after `ember-tpu-kernel`, serialized
as jaxlib's `mosaic-serde` writes it: every op renamed
`stable_mosaic.<dialect>.<op>` (the `ember_tpu` ops and attributes under
Mosaic's `tpu` names), `stable_mosaic.version` on the module, MLIR bytecode
of version 0, base64 in JSON.
"""

import base64
import io
import json
import re

from ..._mlir import ir
from ..._mlir.passmanager import PassManager
from . import Target, register

KERNEL_ATTR = "ember_tpu.kernel_module"
NAME_ATTR = "ember_tpu.kernel_name"
ERROR_ATTR = "ember_tpu.kernel_error"
ALIASES_ATTR = "ember_tpu.kernel_aliases"

# The Mosaic serialization version jaxlib 0.10.2 writes when lowering for
# TPU without a TPU attached (its forward-compatible choice).
MOSAIC_VERSION = 11


def lower_kernel(kernel_text, layouts=False):
    """The kernel module (ember form, as recorded) after `ember-tpu-kernel`,
    as text, checked by `ember-tpu-infer-layout` (a TPU can hold its
    vectors); with `layouts`, the text shows them."""
    from ..context import context

    def run(module, pipeline):
        try:
            PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
        except ir.MLIRError as e:
            # What the kernel does that TPU kernels cannot, at its line.
            notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
            raise NotImplementedError(f"lowering a Pallas kernel for TPU: {notes}") from None

    with context():
        module = ir.Module.parse(kernel_text)
        run(module, "ember-tpu-kernel")
        text = module.operation.get_asm(enable_debug_info=False)
        # Mosaic infers its own layouts: the serialized kernel has none.
        run(module, "ember-tpu-infer-layout")
        return module.operation.get_asm(enable_debug_info=False) if layouts else text


_OP_NAME = re.compile(r'^(\s*(?:%[^"]*= )?)"([A-Za-z_][\w$]*\.[\w$.]+)"(\()', re.M)


def serialize(mosaic_text):
    """The kernel (after `ember-tpu-kernel`) in Mosaic's serialized form:
    MLIR bytecode (version 0) of a module whose ops are unregistered
    `stable_mosaic.*` ops carrying their attributes, as jaxlib's
    `mosaic-serde{serialize=true}` writes them."""
    from ..context import context

    with context():
        generic = ir.Module.parse(mosaic_text).operation.get_asm(
            print_generic_op_form=True, enable_debug_info=False)
    text = _properties_as_attributes(generic).replace("ember_tpu.", "tpu.")

    def rename(m):
        name = m.group(2)
        if name == "builtin.module":
            return m.group(0)
        return f'{m.group(1)}"stable_mosaic.{name}"{m.group(3)}'

    text = _OP_NAME.sub(rename, text)
    # A context of its own with no dialect registered: every attribute and
    # type outside the builtin dialect is kept as its text, which the reader
    # parses with Mosaic's dialects.
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        module.operation.attributes["stable_mosaic.version"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), MOSAIC_VERSION)
        buf = io.BytesIO()
        module.operation.write_bytecode(buf, desired_version=0)
    return buf.getvalue()


def _match(text, i):
    """The index after the bracket closing the one at `text[i]`."""
    depth, k, quoted = 0, i, False
    while k < len(text):
        c = text[k]
        if quoted:
            if c == "\\":
                k += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>" and not (c == ">" and text[k - 1] == "-"):
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    raise ValueError("unbalanced brackets in the generic form")


def _properties_as_attributes(text):
    """The generic form with each op's properties (`<{...}>`) moved into
    its attribute dictionary: bytecode of version 0, which Mosaic's
    serialized kernels use, keeps attributes only."""
    out, i = [], 0
    while True:
        j = text.find(") <{", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        start = j + 2
        end = _match(text, start + 1) + 1  # after "}>"
        props = text[start + 2:end - 2]
        k = end
        if text.startswith(" (", k):  # regions
            k = _match(text, k + 1)
        out.append(text[i:start - 1])
        out.append(_properties_as_attributes(text[end:k]))  # the regions' ops
        if text.startswith(" {", k):  # an attribute dictionary: merge
            close = _match(text, k + 1)
            out.append(" {" + props + ", " + text[k + 2:close])
            i = close
        else:
            out.append(" {" + props + "}")
            i = k


def backend_config(kernel_text):
    """The custom call's backend config (JSON text) for a recorded kernel:
    `has_communication` when it reaches other devices (remote DMAs and
    semaphore signals), and the `collective_id` it was given, as JAX writes
    them."""
    lowered = lower_kernel(kernel_text)
    config = {"body": base64.b64encode(serialize(lowered)).decode("ascii")}
    collective = re.search(r"ember_tpu\.collective_id = (\d+)", kernel_text)
    if _REMOTE.search(lowered):
        # (Copies and signals between the TensorCores of one device, which
        # name a core_id only, are not communication to XLA: JAX's rule.)
        config["has_communication"] = True
    if collective:
        config["collective_id"] = int(collective.group(1))
    config.update({"serialization_format": 1, "needs_layout_passes": True})
    return json.dumps({"custom_call_config": config})


# An enqueue_dma or sem_signal with a target device (the generic form of
# Mosaic's ops prints the operand segments; the custom form names it).
_REMOTE = re.compile(r"ember_tpu\.(enqueue_dma|sem_signal)[^\n]*device_id")


def _kernel_functions(module):
    """{callee name: (kernel text, kernel name, [(operand, output)])} of the
    recorded kernels."""
    out = {}
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func":
            continue
        attrs = op.attributes
        name = ir.StringAttr(attrs["sym_name"]).value
        if ERROR_ATTR in attrs:
            out[name] = (None, ir.StringAttr(attrs[ERROR_ATTR]).value, [])
        elif KERNEL_ATTR in attrs:
            flat = list(ir.DenseI64ArrayAttr(attrs[ALIASES_ATTR])) if ALIASES_ATTR in attrs else []
            out[name] = (ir.StringAttr(attrs[KERNEL_ATTR]).value,
                         ir.StringAttr(attrs[NAME_ATTR]).value, list(zip(flat[::2], flat[1::2])))
    return out


def _expanded(ember_text):
    """The program with its transformations expanded, the kernels' calls
    kept: under `vmap` ember-batch batches each recorded kernel as JAX's
    pallas_call batching rule does (lib/Transforms/BatchTpuKernel.cpp);
    ember-autodiff keeps the kernels of a custom_vjp's fwd and bwd and those
    off the differentiated path, and reports one on it (a kernel has no
    derivative rule: JAX's Pallas TPU kernels are differentiated through a
    custom_vjp, as flash attention is)."""
    from ..context import context
    from ..stablehlo_out import transformation_ops

    with context():
        module = ir.Module.parse(ember_text)
        if not _kernel_functions(module):
            return ember_text
        transformed = transformation_ops(module)
    if not transformed:
        return ember_text
    # The `transforms` stage, with the kernels' calls kept.
    with context():
        module = ir.Module.parse(ember_text)
        try:
            PassManager.parse("builtin.module(ember-expand-transforms{keep-kernel-calls=true "
                              "keep-device-vmaps=true},"
                              "symbol-dce,canonicalize,cse)").run(module.operation)
        except ir.MLIRError as e:
            from ..pass_errors import user_error

            user = user_error(e)  # (a kernel on the differentiated path)
            if user is None:
                raise
            raise user from None
        return module.operation.get_asm(enable_debug_info=True)


def program_stablehlo(ember_text, translate):
    """A traced program as StableHLO for TPU: its kernels become
    `tpu_custom_call`s. `translate(text, transformed=, tpu_kernels=)` is the
    target-independent translation (compiler.py)."""
    from ..context import context

    text = _expanded(ember_text)
    with context():
        kernels = _kernel_functions(ir.Module.parse(text))
    if not kernels:
        return translate(ember_text, platform="tpu")

    def custom_call(callee):
        if callee not in kernels:
            return None
        ktext, kname, aliases = kernels[callee]
        if ktext is None:
            raise NotImplementedError(f"lowering for TPU: {kname}")
        return backend_config(ktext), kname, aliases

    return translate(text, transformed=False, tpu_kernels=custom_call, platform="tpu")


def mosaic_text(ember_text):
    """Every recorded kernel after `ember-tpu-kernel` (the `mosaic` view)."""
    from ..context import context

    with context():
        kernels = _kernel_functions(ir.Module.parse(_expanded(ember_text)))
    parts = []
    for callee, (text, kname, _) in kernels.items():
        if text is None:
            raise NotImplementedError(f"lowering for TPU: {kname}")
        parts.append(f"// kernel {kname} (called as @{callee})\n"
                     f"{lower_kernel(text, layouts=True)}")
    return "\n".join(parts)


def _load(module, opt_level, in_avals, out_avals):
    raise NotImplementedError(
        "running on a TPU is not supported: the tpu target lowers programs to StableHLO "
        "with Mosaic kernels (jit(f).trace(...).lower(lowering_platforms=('tpu',))"
        ".as_text('stablehlo')); run Pallas TPU kernels on the CPU with interpret=True "
        "or without a platform")


TPU = register(Target(
    name="tpu",
    codegen_stages=(),
    load=_load,
    views={"mosaic": ("ember", mosaic_text)},
    stablehlo=program_stablehlo))
