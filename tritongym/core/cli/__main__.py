"""`python -m tritongym.core.cli`: the same as the `tritongym` command."""

from tritongym.core.cli.app import main

main()
