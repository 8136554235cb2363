"""The ``mdmt`` console script: one entry point, one module per subcommand.

Each module in :mod:`mdmt.commands` defines ``HELP`` (one line), ``add_arguments(parser)``
and ``run(args) -> int``.  Errors from bad input (``ValueError``, missing files)
are printed as one line, ``mdmt <command>: error: ...``, with exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__

COMMANDS = {
    "verify": "mdmt.commands.verify",
    "counterexample": "mdmt.commands.counterexample",
    "language": "mdmt.commands.language",
    "score": "mdmt.commands.score",
    "exact": "mdmt.commands.exact",
    "sample": "mdmt.commands.sample",
    "dependencies": "mdmt.commands.dependencies",
    "curve": "mdmt.commands.curve",
    "train": "mdmt.commands.train",
    "figure1": "mdmt.commands.figure1",
    "speed": "mdmt.commands.speed",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mdmt", description="Verification toolkit for masked diffusion language model theory.")
    parser.add_argument("--version", action="version", version=f"mdmt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _name=name)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        msg = str(exc) if not isinstance(exc, OSError) or not exc.filename else f"{exc.strerror}: {exc.filename}"
        print(f"mdmt {args._name}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mdmt {args._name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
