"""Progress of a run: what it compiles, then steps, steps/s, recent return and time left."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rollax._compile import compile_events

__all__ = ["Progress", "compiling"]


@contextlib.contextmanager
def compiling(label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """Say that a run compiles, and how many programs, while it does; then how long it took.

    Yields ``announce(programs)``, to be called when the number of programs is known (as
    ``Agent.warmup``'s ``compiling``). A spinner on a terminal; otherwise (a log file, CI) a
    plain line before and one after.

    Args:
        label: What trains (the algorithm's name).
        enabled: Show anything at all.
    """
    status: list = []
    start = time.perf_counter()

    def announce(programs: int) -> None:
        what = f"{label} compiling {programs} program{'s' if programs != 1 else ''}"
        if not enabled:
            return
        if sys.stderr.isatty():
            from rich.console import Console

            status.append(Console(stderr=True).status(f"[bold]{what}..."))
            status[0].start()
        else:
            print(f"{what}...", file=sys.stderr, flush=True)

    with compile_events() as events:
        try:
            yield announce
        finally:
            for spinner in status:
                spinner.stop()
    if enabled:
        count = len(events.programs)
        cached = f", {events.cache_hits} from the cache" if events.cache_hits else ""
        print(
            f"{label} compiled {count} program{'s' if count != 1 else ''} in "
            f"{time.perf_counter() - start:.1f} s{cached}",
            file=sys.stderr,
            flush=True,
        )


class Progress:
    """Progress as steps, steps/s, recent return and time left.

    A rich progress bar on a terminal; otherwise (a log file, CI) a plain line at every tenth
    of the budget.

    Args:
        label: What trains (the algorithm's name, shown first).
        total: The budget, environment steps per seed.
        done: Steps already done (on resume).
        enabled: Show anything at all.
    """

    def __init__(self, label: str, total: int, done: int, enabled: bool) -> None:
        self.label, self.total, self.bar, self.enabled = label, total, None, enabled
        self.next_line, self.first = 0, None
        if not enabled or not sys.stderr.isatty():
            return
        from rich import progress as rich_progress
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

        self.bar = rich_progress.Progress(
            TextColumn(f"[bold]{label}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TextColumn("{task.fields[rate]:>9} steps/s"),
            TextColumn("return {task.fields[ret]:>8}"),
            TimeRemainingColumn(),
        )
        self.task = self.bar.add_task("train", total=total, completed=done, rate="-", ret="-")
        self.bar.start()

    def update(self, done: int, rate: float, ret: float | None) -> None:
        shown = "-" if ret is None else f"{ret:.1f}"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, rate=f"{rate:,.0f}", ret=shown)
        elif self.enabled and (done >= self.next_line or done >= self.total):
            self.next_line = done + self.total // 10
            # Time left from the pace after the first chunk, which includes compiling.
            if self.first is None:
                self.first, left = (time.perf_counter(), done), "?"
            else:
                pace = (time.perf_counter() - self.first[0]) / max(done - self.first[1], 1)
                left = f"{pace * (self.total - done):.0f}"
            print(
                f"{self.label} {done}/{self.total} steps  {rate:,.0f} steps/s  return {shown}  "
                f"{left} s left",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
