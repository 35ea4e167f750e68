"""The one MLIR context that traces build IR in and the compiler runs passes in."""

from ember._mlir import ir

_context = None


def context():
    global _context
    if _context is None:
        _context = ir.Context()
        _context.allow_unregistered_dialects = False
        for name in ("builtin", "func", "ember"):
            _context.dialects[name]  # load the dialects traces create ops of
    return _context
