"""`python -m tritongym.cli`: the same as the `tritongym` command."""

from tritongym.cli.app import main

main()
