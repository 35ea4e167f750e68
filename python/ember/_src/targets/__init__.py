"""Compilation targets: what runs after the target-independent stages.

A target is one small description on each side of the Python/C++ boundary:
C++'s `TargetDescription` (lib/Pipelines/Targets/) registers its codegen
pipeline as `ember-<name>-codegen`; the module here of the same name says
which stages Python runs and how the target's runtime loads the result.
Adding a target adds one module here and one file there.
"""

import contextlib
import dataclasses
import threading
from collections.abc import Callable

# The target-independent stages every target starts with: (stage name,
# registered pass pipeline). `ember-transforms` expands grad/vmap/custom
# rules to a fixed point; `ember-optimize` rewrites ember IR.
SHARED_STAGES = (("transforms", "ember-transforms"), ("optimize", "ember-optimize"))


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    # (stage name, registered pass pipeline) after the shared stages.
    codegen_stages: tuple
    # load(module, opt_level, in_avals, out_avals) -> a callable kernel on
    # buffers, from the module after the last stage.
    load: Callable
    # Other names `as_text` accepts for a stage: {alias: stage name}.
    aliases: dict = dataclasses.field(default_factory=dict)
    # Texts derived from a stage's IR: {name: (stage name, text -> text)}
    # (the PTX inside the CUDA binary, say).
    views: dict = dataclasses.field(default_factory=dict)
    # For the persistent compilation cache (None: not cached):
    # load_object(object bytes, in_avals, out_avals) -> the kernel, and
    # load(..., object_path=path) writes the object code to `path`.
    load_object: Callable = None
    # What the compiled code depends on besides the program (host CPU...).
    cache_key: Callable = None
    # stablehlo(ember text, translate) -> the program as StableHLO for this
    # target, given the target-independent translation `translate(text,
    # transformed=True, **to_stablehlo options)` (None: that translation).
    stablehlo: Callable = None

    @property
    def stages(self):
        """Every stage in order, after the traced `ember` module."""
        return SHARED_STAGES + tuple(self.codegen_stages)

    def stage_name(self, stage):
        stage = self.aliases.get(stage, stage)
        if stage != "ember" and stage not in dict(self.stages) and stage not in self.views:
            names = ["ember", *dict(self.stages), *self.aliases, *self.views]
            raise ValueError(f"unknown stage {stage!r} for target {self.name!r}; "
                             f"stages: {', '.join(names)}")
        return stage


_targets = {}


def register(target):
    _targets[target.name] = target
    return target


class _Lowering(threading.local):
    def __init__(self):
        # (platforms, 0-d int32 platform index or None) while a program is
        # traced for platforms other than the CPU alone.
        self.state = None
        # How many `platform_dependent` calls with branches that differ
        # between platforms were traced (a trace that made none is the same
        # program on every platform).
        self.calls = 0


lowering = _Lowering()


@contextlib.contextmanager
def lowering_platforms(platforms, index=None):
    """While a program is traced for `platforms`: `platform_dependent`
    takes the branch of the one platform, or, for several (an export),
    switches by `index`, the program's platform index argument (which of
    `platforms` it runs on; JAX's `_platform_index`)."""
    saved = lowering.state
    lowering.state = (tuple(_PLATFORM_ALIASES.get(p, p) for p in platforms), index)
    try:
        yield
    finally:
        lowering.state = saved


# Platform names JAX uses for a target.
_PLATFORM_ALIASES = {"gpu": "cuda", "host": "cpu"}


def get_target(name="cpu"):
    name = _PLATFORM_ALIASES.get(name, name)
    if name not in _targets:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(_targets)}")
    return _targets[name]


from . import cpu, cuda, tpu  # noqa: E402,F401  (registers the targets)
