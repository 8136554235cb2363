"""``python -m mdmt``: the ``mdmt`` console script."""

from mdmt.cli import main

if __name__ == "__main__":  # importing the module (documentation tools inspect every submodule) runs nothing
    raise SystemExit(main())
