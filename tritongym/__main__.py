from tritongym.core.cli import main

main()
