"""The reference keeper: one trusted process per GPU (several with many workers) that builds a problem's reference
side (outputs, float64 gold, probes' references), times the reference, screens problems and judges what the
candidates' workers lend it (ARCHITECTURE.md §3).  It runs no candidate code; a candidate's worker never holds a
reference output.  `keeper.py` is the process and its request loop, `screen.py` its `SCRN`."""
