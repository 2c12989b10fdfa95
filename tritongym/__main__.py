from tritongym.core.timeline import mark

mark("cli_start")

from tritongym.cli.app import main  # noqa: E402 - the mark first: the CLI's own imports are part of what it times

main()
