"""`python -m sqlgate` is the `sqlgate` command."""

from sqlgate.surfaces.cli.app import main

if __name__ == "__main__":
    main(prog_name="sqlgate")
