"""The `tritongym` command line: typer commands over `tritongym.api`, one module per command group.

`app` holds the root commands (eval, best, problems, plugins, ...), `train` the model-loading ones, `report`
and `browse` theirs, `common` the options and output every command shares.  Nothing heavy is imported
at module level: `tritongym --help` must not pay for torch.
"""

from tritongym.cli.app import app, main

__all__ = ["app", "main"]
