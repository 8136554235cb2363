"""The ``mdmt`` console script: one entry point, one module per subcommand.

Each module in :mod:`mdmt.commands` defines ``add_arguments(parser)`` and ``run(args) -> int``;
its one-line help is in :data:`COMMANDS`, so that only the module of the command being run is
imported (and none for ``mdmt --help`` or ``mdmt --version``).  Building a command's parser imports
neither sympy, scipy nor torch: a command module imports what it computes with inside ``run``.

The contract (docs/reliability.md): a command exits 0 with its output, or 2 with exactly one
line on standard error, ``mdmt <command>: error: ...``.  Bare ``mdmt`` prints the usage and the list
of commands on standard output and exits 2 with one such line (a missing command is a usage error,
as argparse has it).  Every expected error is such a line:
bad input (``ValueError``, which includes the resource guard's ``ResourceError`` and the output
checks' ``OutputError``), any ``OSError`` on an input or output path (missing file, folder,
permission, full disk), arithmetic overflow, and -- as a last line of defence -- running out of
memory or stack.  A command that needs PyTorch where it is not installed (the ``empirical`` extra)
says so in such a line.  ``MDMT_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from mdmt import __version__
from mdmt.extras import is_torch_missing, torch_message

COMMANDS = {
    "verify": ("mdmt.commands.verify", "run every check of the paper's proofs on embedded instances (the main job)"),
    "compile": ("mdmt.commands.compile", "compile mdmt's numba kernels ahead of time, in parallel (optional; after install)"),
    "counterexample": ("mdmt.commands.counterexample", "write the Theorem 4.4 interval counterexample HMM"),
    "language": ("mdmt.commands.language", "draw a random n-gram/HMM language (Table 1 presets)"),
    "score": ("mdmt.commands.score", "exact log-likelihood and support membership of sequences"),
    "exact": ("mdmt.commands.exact", "exact output law of the N-step sampler: KL, SER, proof-chain quantities"),
    "sample": ("mdmt.commands.sample", "oracle MDM sampler at any length: SER, generative perplexity, NFE"),
    "dependencies": ("mdmt.commands.dependencies", "exact expected number of dependencies E[sum_j D_j]"),
    "curve": ("mdmt.commands.curve", "bound curves for TER and SER and the step counts they imply"),
    "data": ("mdmt.commands.data", "seeded train/validation sets of a language, stored and verified on disk"),
    "train": ("mdmt.commands.train", "train an MDM or autoregressive transformer on a language"),
    "evaluate": ("mdmt.commands.evaluate", "score a trained network: validation gap, learning error, SER, perplexity"),
    "figure1": ("mdmt.commands.figure1", "Figure 1: TER/SER against sampling steps for trained and oracle MDMs and AR"),
    "speed": ("mdmt.commands.speed", "time MDM sampling against autoregressive generation with a KV cache"),
    "atlas": ("mdmt.commands.atlas", "exact KL of each reverse process beside the chain, Li-Cai, TC/DTC, ParallelBench bounds"),
    "refute": ("mdmt.commands.refute", "search a family of languages for a certified counterexample to a claimed bound"),
    "adaptive": ("mdmt.commands.adaptive", "adaptive and position-aware unmasking: sample, exact law, SER and TER studies"),
    "samplers": ("mdmt.commands.samplers", "network calls each sampler (optimal, bisect, ReMDM, verified drafting, ...) needs for an SER target against L"),
    "schedule": ("mdmt.commands.schedule", "the optimal fixed step sizes of a language (exact KL) beside balanced and Theorem 4.2 schedules"),
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) and no abbreviated options (``--length`` is not ``--lengths``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse's own usage errors: one line, exit 2, named after the command
        self.exit(2, f"{getattr(self, 'command_prog', None) or self.prog}: error: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; the subcommand modules are imported for ``only`` (all when None, none when ``""``)."""
    parser = _Parser(prog="mdmt", description="Verification toolkit for masked diffusion language model theory.")
    parser.add_argument("--version", action="version", version=f"mdmt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_run=module.run, _name=name)
            _add_examples(name, p)
    return parser


def _add_examples(name: str, parser) -> None:
    """The Examples section (:mod:`mdmt.examples`) of a command and of each of its subcommands."""
    from mdmt.examples import epilog

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    leaves = [(f"{name} {kind}", p) for kind, p in subs[0].choices.items()] if subs else [(name, parser)]
    for leaf, p in leaves:
        p.epilog, p.formatter_class = epilog(leaf), argparse.RawDescriptionHelpFormatter
    if subs:  # `mdmt curve --help`: the examples of every kind
        parser.epilog = "\n".join(filter(None, (epilog(leaf) for leaf, _ in leaves))).replace("\nExamples:", "")
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


_RAN: str | None = None  # the command main ran last (not set by --help, --version or a usage error)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    only = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only if only in COMMANDS else "")
    if not argv:  # bare `mdmt`: the usage and the list of commands, then the usage error (exit 2, as argparse)
        parser.print_help()
        print("mdmt: error: give a COMMAND (the list above); mdmt COMMAND --help describes its flags",
              file=sys.stderr)
        return 2
    if only in COMMANDS:  # an argument no subcommand takes is reported by the root parser: under the command's name
        parser.command_prog = f"mdmt {only}"
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (2), --help and --version (0)
        return int(exc.code or 0)
    if getattr(args, "out", None) == "":  # an empty --out would write nothing, or the current folder
        print(f"mdmt {args._name}: error: --out: expected a file or folder name, got ''", file=sys.stderr)
        return 2
    try:
        from mdmt.runtime.resources import work_limit

        work_limit()  # MDMT_MAX_WORK has one parser: a value that is not a positive number is refused by every command
        global _RAN
        _RAN = args._name
        return int(args._run(args) or 0)
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt as exc:  # Ctrl-C: 130; SIGTERM/SIGHUP during a write (outputs.Terminated): 128 + signal
        signum = getattr(exc, "signum", None)
        print(f"mdmt {args._name}: interrupted{f': {exc}' if signum else ''}", file=sys.stderr)
        return 128 + signum if signum else 130
    except (ValueError, OSError, OverflowError, MemoryError, RecursionError, ModuleNotFoundError) as exc:
        if os.environ.get("MDMT_DEBUG") == "1" or (isinstance(exc, ModuleNotFoundError) and not is_torch_missing(exc)):
            raise
        print(f"mdmt {args._name}: error: {error_line(exc, args._name)}", file=sys.stderr)
        return 2


#: Commands after which the console script skips the interpreter's teardown (:func:`script`).
QUICK_EXIT = frozenset({"verify"})


def script() -> None:
    """The ``mdmt`` console script (and ``python -m mdmt``): :func:`main`, then the exit.

    After the commands of :data:`QUICK_EXIT` (``mdmt verify``, whose checks import sympy, scipy and numba's
    compiled kernels) the process ends without the interpreter's teardown of those libraries' objects, a fifth of a
    second of the main job's few seconds: the exit handlers run and both streams are flushed first, so the output and
    the exit status are those of a normal exit (``--help`` and usage errors exit normally).  ``main`` itself (called
    from Python, from tests) never exits.
    """
    code = main()
    if _RAN in QUICK_EXIT:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`mdmt verify | head`) or a closed stream
                pass
        os._exit(code)
    sys.exit(code)


def error_line(exc: BaseException, command: str = "") -> str:
    """The one-line message of an expected error (no traceback, no newline)."""
    if is_torch_missing(exc):  # MissingExtra included: the message names the command
        msg = torch_message(f"mdmt {command}".strip())
    elif isinstance(exc, OSError) and exc.strerror:
        from mdmt.runtime.numba_cache import cache_write_error

        msg = (f"{exc.strerror}: {exc.filename}" if exc.filename else
               cache_write_error(exc) or exc.strerror)
    elif isinstance(exc, MemoryError):
        msg = (f"out of memory{': ' + str(exc) if str(exc) else ''} (the inputs need more memory than this machine "
               "has; set MDMT_MAX_MEMORY to make mdmt refuse such inputs before it starts)")
    elif isinstance(exc, RecursionError):
        msg = f"input nested too deeply ({exc})"
    else:
        msg = str(exc) or type(exc).__name__
    return " ".join(msg.split())


if __name__ == "__main__":
    raise SystemExit(main())
