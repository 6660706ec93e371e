"""An executor that runs every task in a fresh process of its own, so that a process that dies takes down one task.

:class:`concurrent.futures.ProcessPoolExecutor` shares its workers between tasks: when one worker dies (killed, out
of memory, a segfault in a kernel) the pool is *broken*, every pending and running future fails, and the other
workers are terminated with their work. A paper-scale unit runs minutes to hours, so :class:`TaskProcesses` starts
one spawned process per task instead (a few seconds each, nothing next to a unit), at most ``max_workers`` at a time,
and a task whose process ends without a result fails alone with :class:`WorkerDied`.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import multiprocessing
import multiprocessing.connection
import threading
from typing import Callable

__all__ = ["TaskProcesses", "WorkerDied"]


class WorkerDied(RuntimeError):
    """The process that ran a task ended without returning its result (killed, out of memory, crashed)."""


def _task_main(conn, initializer, initargs, fn, args, kwargs) -> None:
    """A task's process: ``initializer(*initargs)``, then ``fn(*args, **kwargs)``; its result (or its exception) goes
    back through ``conn``."""
    if initializer is not None:
        initializer(*initargs)
    try:
        message = ("ok", fn(*args, **kwargs))
    except BaseException as err:  # noqa: BLE001  (sent back to the parent, raised there)
        message = ("err", err)
    try:
        conn.send(message)
    except Exception as err:  # noqa: BLE001  (an exception or a result that does not pickle)
        conn.send(("err", RuntimeError(f"the task's {message[0]} could not be sent back: {err!r}")))
    conn.close()


class TaskProcesses(cf.Executor):
    """Run each submitted task in a new spawned process, at most ``max_workers`` at once (module docstring).

    Parameters
    ----------
    max_workers : int
    initializer : callable, optional
        Called in each task's process before the task (e.g. one torch thread, die with the parent).
    initargs : tuple
    """

    def __init__(self, max_workers: int, initializer: Callable | None = None, initargs: tuple = ()):
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be a positive int, got {max_workers!r}")
        self._ctx = multiprocessing.get_context("spawn")
        self._max, self._init, self._initargs = max_workers, initializer, initargs
        self._queue: collections.deque = collections.deque()  # (future, fn, args, kwargs) not started yet
        self._running: dict = {}  # parent connection -> (future, process)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name="TaskProcesses", daemon=True)
        self._thread.start()

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        with self._lock:
            if self._closing:
                raise RuntimeError("cannot submit a task after shutdown")
            future: cf.Future = cf.Future()
            self._queue.append((future, fn, args, kwargs))
        self._wake.set()
        return future

    def _start_waiting(self) -> None:
        with self._lock:
            while self._queue and len(self._running) < self._max:
                future, fn, args, kwargs = self._queue.popleft()
                if not future.set_running_or_notify_cancel():
                    continue
                parent, child = self._ctx.Pipe(duplex=False)
                process = self._ctx.Process(
                    target=_task_main, args=(child, self._init, self._initargs, fn, args, kwargs), daemon=True
                )
                try:
                    process.start()
                except BaseException as err:  # noqa: BLE001
                    future.set_exception(err)
                    continue
                finally:
                    child.close()
                self._running[parent] = (future, process)

    def _finish(self, conn) -> None:
        future, process = self._running.pop(conn)
        try:
            status, value = conn.recv()
        except (EOFError, OSError):
            process.join()
            future.set_exception(WorkerDied(f"the task's process died (exit code {process.exitcode})"))
        else:
            process.join()
            (future.set_result if status == "ok" else future.set_exception)(value)
        finally:
            conn.close()

    def _loop(self) -> None:
        while True:
            self._start_waiting()
            with self._lock:
                conns = list(self._running)
                if self._closing and not conns and not self._queue:
                    return
            if not conns:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            for conn in multiprocessing.connection.wait(conns, timeout=0.2):
                with self._lock:
                    self._finish(conn)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closing = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
                for future, process in self._running.values():  # running tasks end with the executor
                    process.terminate()
        self._wake.set()
        if wait:
            self._thread.join()
