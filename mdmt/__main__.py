"""``python -m mdmt``: the ``mdmt`` console script."""

from mdmt.cli import script

if __name__ == "__main__":  # importing the module (documentation tools inspect every submodule) runs nothing
    script()
