"""The one MLIR context that traces build IR in and the compiler runs passes in.

Threads share it: each builds its own modules (trace state is per thread);
passes run one pipeline at a time (`compile_lock`), while other threads go
on tracing and running compiled code."""

import threading

from ember._mlir import ir

_context = None

# Held while a pipeline verifies and lowers a module and while compiled code
# is loaded: pass pipelines release the GIL, and MLIR's diagnostics go to the
# handlers of the context, so two at once would mix their errors.
compile_lock = threading.RLock()


def context():
    if _context is None:
        with compile_lock:
            return _create()
    return _context


def _create():
    global _context
    if _context is None:
        ctx = ir.Context()
        ctx.allow_unregistered_dialects = False
        # Every registered dialect is loaded now: a pass pipeline that loaded
        # one later (its dependent dialects) would change the context while
        # another thread builds IR in it (PassManager.run releases the GIL).
        ctx.load_all_available_dialects()
        _context = ctx  # published complete: other threads read it unlocked
    return _context
