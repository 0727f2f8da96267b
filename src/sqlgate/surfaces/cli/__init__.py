"""The command line for humans: `sqlgate serve` and the commands to inspect and restore.

`main` (in app.py) is the click group the `sqlgate` script runs.
"""

from sqlgate.surfaces.cli.app import main

__all__ = ["main"]
