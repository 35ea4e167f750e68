"""`jax.debug.breakpoint`: an interactive debugger (JAX's `jdb`) that stops
where the call is reached, in compiled code too.

At trace time `breakpoint` records the Python frames above it (the user's
frames, Ember's own filtered out as JAX filters its) with their locals;
array leaves of the locals (tracers under a transformation) are passed to
a debug callback, so at run time the debugger sees their values. Without a
trace the debugger starts at once. Commands are JAX's: `p`/`pp` and bare
expressions evaluate in the current frame, `l`/`ll` list its source, `u`/`d`
move between frames, `w`/`bt` print the stack, `c` continues, `q` (and end
of input) raise `SystemExit` as JAX's do: outside any trace that exits the
program, inside compiled code the call raises JaxRuntimeError (callback.py).

Ember writes this itself on the standard library's `cmd`: JAX's debugger is
part of jaxlib's Python, which Ember does not depend on.
"""

import cmd
import linecache
import pprint
import sys
import traceback

from . import callback, core, tree_util


class DebuggerFrame:
    """A recorded frame: where it is, and its locals (array leaves replaced
    by their run-time values) and globals."""

    def __init__(self, filename, lineno, function, locals_, globals_):
        self.filename, self.lineno, self.function = filename, lineno, function
        self.locals, self.globals = locals_, globals_


def _is_array(x):
    return isinstance(x, core.Value)


def _user_frames(filter_frames, num_frames):
    frames, f = [], sys._getframe(2)
    while f is not None and (num_frames is None or len(frames) < num_frames):
        module = f.f_globals.get("__name__", "")
        if not (filter_frames and (module == "ember" or module.startswith("ember."))):
            frames.append(f)
        f = f.f_back
    return frames


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,  # noqa: A001
               token=None, **kwargs):
    """Stops here in an interactive debugger, with the values of the local
    variables of this and the calling frames (JAX's `jax.debug.breakpoint`)."""
    del backend, ordered
    frames = _user_frames(filter_frames, num_frames)
    layout, dynamic = [], []
    for f in frames:
        names = []
        for name, value in f.f_locals.items():
            leaves, tree = tree_util.tree_flatten_lo(value)
            arrays = [k for k, leaf in enumerate(leaves) if _is_array(leaf)]
            names.append((name, value, leaves, tree, arrays, len(dynamic)))
            dynamic.extend(leaves[k] for k in arrays)
        layout.append((f.f_code.co_filename, f.f_lineno, f.f_code.co_name, f.f_globals, names))

    def enter(*values):
        recorded = []
        for filename, lineno, function, globals_, names in layout:
            local = {}
            for name, value, leaves, tree, arrays, start in names:
                if not arrays:
                    local[name] = value
                    continue
                leaves = list(leaves)
                for j, k in enumerate(arrays):
                    leaves[k] = values[start + j]
                local[name] = tree_util.tree_unflatten(tree, leaves)
            recorded.append(DebuggerFrame(filename, lineno, function, local, globals_))
        Jdb(recorded).run()

    if core._trace_stack or any(isinstance(v, core.Tracer) for v in dynamic):
        callback.debug_callback(enter, *dynamic)
    else:
        enter(*dynamic)
    return token


class Jdb(cmd.Cmd):
    """JAX's command-line debugger over recorded frames (innermost first)."""

    prompt = "(jdb) "
    use_rawinput = False

    def __init__(self, frames, stdin=None, stdout=None):
        super().__init__(stdin=stdin or sys.stdin, stdout=stdout or sys.stdout)
        self.frames, self.index = frames, 0

    def run(self):
        self.stdout.write("Entering jdb:\n")
        self.cmdloop()

    @property
    def frame(self):
        return self.frames[self.index]

    def _eval(self, expr):
        return eval(expr, self.frame.globals, self.frame.locals)  # noqa: S307 (a debugger)

    def _error(self):
        kind, value, _ = sys.exc_info()
        self.stdout.write("".join(traceback.format_exception_only(kind, value)))

    def emptyline(self):
        return False

    def default(self, line):
        try:
            try:
                code = compile(line + "\n", "<stdin>", "single")
            except SyntaxError:
                code = compile(line + "\n", "<stdin>", "exec")
            old = sys.stdout
            sys.stdout = self.stdout
            try:
                exec(code, self.frame.globals, self.frame.locals)  # noqa: S102 (a debugger)
            finally:
                sys.stdout = old
        except Exception:  # noqa: BLE001 (the user's expression: reported, the session goes on)
            self._error()

    def do_p(self, arg):
        """p expression: prints the value of the expression."""
        try:
            self.stdout.write(repr(self._eval(arg)) + "\n")
        except Exception:  # noqa: BLE001
            self._error()

    def do_pp(self, arg):
        """pp expression: pretty-prints the value of the expression."""
        try:
            self.stdout.write(pprint.pformat(self._eval(arg)) + "\n")
        except Exception:  # noqa: BLE001
            self._error()

    def _source(self, first, last):
        f = self.frame
        for n in range(max(first, 1), last + 1):
            line = linecache.getline(f.filename, n)
            if not line:
                break
            self.stdout.write(f"{n:>4} {'->' if n == f.lineno else '  '} {line.rstrip()}\n")

    def do_l(self, arg):
        """l(ist): the source around the current line."""
        self._source(self.frame.lineno - 5, self.frame.lineno + 5)

    do_list = do_l

    def do_ll(self, arg):
        """ll: the source of the current function."""
        lines = [n for n in range(1, self.frame.lineno + 1)
                 if linecache.getline(self.frame.filename, n).lstrip().startswith(
                     ("def ", "async def ", "lambda"))]
        self._source(lines[-1] if lines else self.frame.lineno, self.frame.lineno + 10)

    def _where(self, k):
        f = self.frames[k]
        mark = "> " if k == self.index else "  "
        self.stdout.write(f"{mark}{f.filename}({f.lineno}){f.function}()\n")

    def do_u(self, arg):
        """u(p): moves one frame up (to the caller)."""
        if self.index + 1 >= len(self.frames):
            self.stdout.write("At topmost frame.\n")
            return
        self.index += 1
        self._where(self.index)

    do_up = do_u

    def do_d(self, arg):
        """d(own): moves one frame down (to the callee)."""
        if self.index == 0:
            self.stdout.write("At bottommost frame.\n")
            return
        self.index -= 1
        self._where(self.index)

    do_down = do_d

    def do_w(self, arg):
        """w(here): prints the stack, the current frame marked."""
        for k in reversed(range(len(self.frames))):
            self._where(k)

    do_where = do_bt = do_w

    def do_c(self, arg):
        """c(ontinue): leaves the debugger, and the program goes on."""
        return True

    do_cont = do_continue = do_c

    def do_q(self, arg):
        """q(uit): raises SystemExit (as JAX's debugger does)."""
        sys.exit(0)

    do_quit = do_exit = do_EOF = do_q  # noqa: N815 (cmd's name for end of input)
