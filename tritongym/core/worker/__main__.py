"""`python -m tritongym.core.worker LOGFILE`: the sandboxed worker's entry point (task JSON on stdin).

An entry module of its own, so that the task runner is imported once under its real name: the candidate's
child and the GPU worker import the same module objects the runner raises and catches.
"""

from tritongym.core.worker.task_runner import main

main()
