"""The user-facing exceptions of pass diagnostics (compiler.py, targets).

Pass diagnostics that report what the user asked for, not an Ember bug,
carry "[ember:<id>]" (emitUserError in C++); Runtime.def names the
exception of each id. A module of its own so that both the compiler and
the targets (below it) raise them."""

import builtins
import re

from ember._mlir._mlir_libs import _ember_runtime

_ERROR_KINDS = _ember_runtime.runtime_tables()["error_kinds"]
_ERROR_TAG = re.compile(r"\[ember:([\w-]+)\] ")


def user_error(e):
    """The user-facing exception for a pass failure caused by the program
    (differentiating an opaque callback, say), naming the user's line;
    None when the failure is not one."""
    for d in e.error_diagnostics:
        m = _ERROR_TAG.search(d.message)
        if m is None or m.group(1) not in _ERROR_KINDS:
            continue
        cls = getattr(builtins, _ERROR_KINDS[m.group(1)])
        loc = str(d.location)
        where = re.match(r'loc\((?:".*?"\()?"(.*)":(\d+):\d+\)', loc)
        at = f"{where.group(1)}:{where.group(2)}" if where else loc
        # Without MLIR's "'ember.op' op " prefix: the user wrote no such op.
        message = re.sub(r"^'[\w.]+' op ", "", _ERROR_TAG.sub("", d.message))
        return cls(f"{message}\n(at {at})")  # (JAX's text alone on the first line)
    return None
