"""The `tritongym` command line: typer commands over `tritongym.api`, one module per command group.

`app` assembles the typer app from the groups' modules (`eval`, `run`, `best`, `kernel`, `tune`, `train` for
the commands that load a model, `report`, `advantages`, `plugins`, `serve`, `problems`, `registry` with
`browse`, `service_client` for `tritongym client`); `common` holds the options and output every command
shares.  Nothing heavy is imported at module level: `tritongym --help` must not pay for torch, the API, the
evaluator or the registry.
"""

from tritongym.cli.app import app, main

__all__ = ["app", "main"]
