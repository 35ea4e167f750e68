"""Cooperative threads for the Pallas interpreters that run a kernel's
concurrent agents (the blocks and thread groups of a Mosaic GPU cluster,
mosaic_gpu.py; the devices of a TPU kernel under shard_map,
tpu_interpret.py): each agent is a Python thread, exactly one runs at a
time, and control passes only where the hardware could wait (a barrier or
semaphore wait, a DMA wait), so a kernel's synchronization decides the
interleaving and a state where no agent can proceed is a deadlock."""

import threading


class Abort(BaseException):
    """Unwinds the other agents once one has failed."""


class Worker:
    """One agent: `name` for messages; `waiting` is (ready predicate,
    description) while it is blocked."""

    def __init__(self, name):
        self.name = name
        self.event = threading.Event()
        self.waiting = None
        self.done = False


class Scheduler:
    """Runs workers one at a time. `local.worker` is the worker of the
    running thread; `deadlock(stuck)` makes the exception raised when no
    worker can proceed (`stuck`: "name: what it waits for" lines)."""

    def __init__(self, local, deadlock):
        self.local, self.deadlock = local, deadlock
        self.workers, self.threads, self.error = [], [], None

    def run(self, workers, body):
        """`body(w)` in each worker's thread; re-raises the first error."""
        self.workers, self.threads = list(workers), []
        self.finished = threading.Event()
        for w in workers:
            self.start(w, lambda w=w: body(w))
        workers[0].event.set()
        self.finished.wait()
        for t in list(self.threads):
            t.join()
        if self.error is not None:
            raise self.error

    def start(self, w, fn):
        def main():
            self.local.worker = w
            w.event.wait()
            try:
                if self.error is None:
                    fn()
            except Abort:
                pass
            except BaseException as e:  # noqa: BLE001 - re-raised by run()
                if self.error is None:
                    self.error = e
            finally:
                w.done = True
                self.local.worker = None
                self._switch(w, final=True)

        t = threading.Thread(target=main, daemon=True)
        self.threads.append(t)
        t.start()

    def _next(self, w):
        """The next worker that can run (round robin after `w`), or None."""
        k = self.workers.index(w)
        order = self.workers[k + 1:] + self.workers[:k + 1]
        for v in order:
            if v.done:
                continue
            if v.waiting is None or v.waiting[0]():
                return v
        return None

    def _switch(self, w, final=False):
        if self.error is not None:
            nxt = next((v for v in self.workers if not v.done), None)
        else:
            nxt = self._next(w)
            if nxt is None and not all(v.done for v in self.workers):
                self.error = self.deadlock([f"{v.name}: {v.waiting[1]}" for v in self.workers
                                            if not v.done and v.waiting is not None])
                nxt = next((v for v in self.workers if not v.done), None)
        if nxt is None:
            self.finished.set()
            return
        if nxt is not w:
            nxt.event.set()
            if not final:
                w.event.clear()
                w.event.wait()
        if not final and self.error is not None:
            raise Abort()

    def block_until(self, w, ready, what):
        """Blocks `w` until `ready()` holds, letting the others run."""
        if ready():
            return
        w.waiting = (ready, what)
        w.event.clear()
        while not ready():
            self._switch(w)
            if self.error is not None:
                raise Abort()
        w.waiting = None
