"""`python -m sqlgate` is the `sqlgate` command."""

from sqlgate.surfaces.cli import main

main(prog_name="sqlgate")
