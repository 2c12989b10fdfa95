from tritongym.core.cli.app import main

main()
