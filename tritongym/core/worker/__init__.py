"""What runs inside the sandboxed worker process, never in the parent.

`python -m tritongym.core.worker` runs one task (`task_runner`); `gpu_worker` serves many on a warm
GPU, forked by the `zygote`.  The candidate itself runs in a forked child (`candidate_runner`) after the
reference's outputs exist; `probes`, `compare`, `launches`, `op_trace`, `timing`, `gpu_profile` and
`compiled_reference` gather the evidence; `trusted` keeps the CUDA primitives saved before any candidate
ran; `stages` and `tensors` are the shared helpers at the bottom; `frames` is the wire format to the pool.

May import: the kernel and its own modules only (never the parent's side in `sandbox`, nor `registry`,
`eval` or above), in one direction: task_runner/gpu_worker -> candidate_runner -> probes -> compare/tensors/stages.
"""
