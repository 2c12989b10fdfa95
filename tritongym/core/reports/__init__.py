"""Reports of stored runs: Fast@p per turn (`fast_p`, `run_report`) and training metrics (`metrics_report`).

May import: the kernel and `registry`.  matplotlib only when a plot is drawn.
"""
