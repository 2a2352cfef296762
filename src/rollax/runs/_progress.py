"""Progress of a run: steps, steps/s, recent return and time left."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


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
