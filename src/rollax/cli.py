"""The ``rollax`` command line: ``train``, ``resume``, ``eval`` and ``envs``.

Options come from the configuration dataclasses (:class:`~rollax.agents.ppo.PPOConfig` and
:class:`~rollax.runs.RunConfig`): every field is an option and its docstring is its help.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import sys
import textwrap
from typing import Any

__all__ = ["main"]


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under each field of a dataclass (read from its source)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _add_fields(parser: argparse.ArgumentParser, cls: type, title: str, note: str = "") -> None:
    """One option per field of ``cls``; absent options stay ``None`` (the default applies)."""
    group = parser.add_argument_group(title, note or None)
    docs = field_docs(cls)
    for field in dataclasses.fields(cls):
        flag = "--" + field.name.replace("_", "-")
        default = field.default
        shown = ", ".join(map(str, default)) if isinstance(default, tuple) else default
        help_text = f"{docs.get(field.name, '')} (default: {shown})".replace("%", "%%")
        kind = str(field.type)
        if kind == "bool":
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif kind.startswith("tuple[int"):
            group.add_argument(flag, type=int, nargs="+", default=None, help=help_text)
        elif kind.startswith("tuple[str"):
            group.add_argument(flag, type=str, nargs="+", default=None, help=help_text)
        else:
            types = {"int": int, "float": float, "str": str}
            group.add_argument(flag, type=types[kind], default=None, help=help_text)


def _given(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    values = {}
    for field in dataclasses.fields(cls):
        value = getattr(args, field.name, None)
        if value is not None:
            values[field.name] = tuple(value) if isinstance(value, list) else value
    return values


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``rollax`` command."""
    from rollax.agents.ppo import PPOConfig
    from rollax.runs import RunConfig

    parser = argparse.ArgumentParser(
        prog="rollax", description="Train, resume and evaluate reinforcement-learning runs."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="start a training run")
    algos = train.add_subparsers(dest="algo", required=True)
    ppo = algos.add_parser(
        "ppo",
        help="Proximal Policy Optimization",
        description="Train PPO. Unset options take the environment's preset (see "
        "rollax.agents.ppo.PRESETS) or PPOConfig's defaults.",
    )
    _add_fields(ppo, RunConfig, "run")
    _add_fields(ppo, PPOConfig, "PPO", "Defaults shown are PPOConfig's; presets may differ.")

    resume = commands.add_parser("resume", help="continue a run from its newest checkpoint")
    resume.add_argument("run_dir", metavar="RUN_DIR", help="the run's directory")
    resume.add_argument(
        "--total-steps",
        type=int,
        default=None,
        help="a new budget (environment steps per seed; the learning-rate schedule is "
        "stretched to it); default: the run's own",
    )

    evaluate = commands.add_parser("eval", help="evaluate a run's newest checkpoint")
    evaluate.add_argument("run_dir", metavar="RUN_DIR", help="the run's directory")
    evaluate.add_argument("--episodes", type=int, default=32, help="episodes per seed")
    evaluate.add_argument(
        "--video", default=None, metavar="FILE", help="also record an episode to FILE (.gif/.mp4)"
    )

    commands.add_parser("envs", help="list the registered environments")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except ValueError as e:  # configuration and checkpoint errors: a message, not a trace
        print(f"rollax {args.command}: error: {e}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    from rollax import runs

    if args.command == "envs":
        from rollax.envs import registered_envs

        print("\n".join(registered_envs()))
        return 0
    if args.command == "train":
        from rollax.agents.ppo import PPOConfig
        from rollax.agents.ppo.config import PRESETS
        from rollax.envs import make

        run_config = runs.RunConfig(**_given(args, runs.RunConfig))
        make(run_config.env)  # an unknown id fails here, listing close matches
        base = PRESETS.get(run_config.env, PPOConfig())
        algo_config = base.replace(**_given(args, PPOConfig))
        runs.train(algo_config, run_config)
        return 0
    if args.command == "resume":
        runs.resume(args.run_dir, args.total_steps)
        return 0
    if args.command == "eval":
        if args.video:
            runs.check_video_path(args.video, args.run_dir)
        result = runs.evaluate_run(args.run_dir, args.episodes)
        print(json.dumps(result, indent=2))
        if args.video:
            path, episode_return = runs.write_video(args.run_dir, args.video)
            print(f"Wrote {path} (one episode, return {episode_return:.1f}).", file=sys.stderr)
        return 0
    raise AssertionError(args.command)
