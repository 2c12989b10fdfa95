"""The source-scan library: what static checks learn from a candidate's source, read once with `ast`.

`ast_scan` answers every check's questions about a parsed tree for any spelling (aliases, kernels, launch
sites, reachable host functions); `host_compute` finds where host code writes torch compute.  Pure
functions of source text, so they sit just above the kernel, where the check plugins and `tune` may use
them without pulling in the pipeline.

May import: the kernel only.
"""
