# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""MPI's own both-directions ceiling between two nodes: MPI_Sendrecv of one buffer each way, no reduction.

Run by tests/perf/fabric_efficiency.sh with mpirun on two nodes of R ranks each (through rank_env.sh, so rank l of
each node is on rail l): rank l of the first node exchanges with rank l of the second, every pair at once, as the
ring engine's rail rings do. Prints one line per size (rank 0): "<bytes> <GB/s each way, per pair, the slowest pair>
<GB/s each way, all pairs together> <ms per numpy add of the buffer>", the add being the reduction's own cost.
"""
from __future__ import annotations
import time

import numpy as np
from mpi4py import MPI

ITERS = 5
comm = MPI.COMM_WORLD
half = comm.Get_size() // 2
rank = comm.Get_rank()
peer = rank + half if rank < half else rank - half
for size in (16 << 20, 64 << 20):
    send = np.ones(size // 4, np.float32)
    recv = np.empty_like(send)
    for _ in range(2):
        comm.Sendrecv([send, MPI.FLOAT], peer, 0, [recv, MPI.FLOAT], peer, 0)
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(ITERS):
        comm.Sendrecv([send, MPI.FLOAT], peer, 0, [recv, MPI.FLOAT], peer, 0)
    elapsed = comm.allreduce((time.perf_counter() - start) / ITERS, op=MPI.MAX)
    start = time.perf_counter()
    for _ in range(ITERS):
        np.add(send, recv, out=recv)
    add = (time.perf_counter() - start) / ITERS
    if rank == 0:
        print('%d %.4f %.4f %.2f' % (size, size / elapsed / 1e9, half * size / elapsed / 1e9, add * 1e3))
