from tritongym.cli.app import main

main()
