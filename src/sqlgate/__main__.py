"""`python -m sqlgate` is the `sqlgate` command."""

from sqlgate.surfaces.cli import main

if __name__ == "__main__":
    main(prog_name="sqlgate")
