# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The ``ipc`` engine of allreduce.py: what one node's memory allows an allreduce of its ranks, the limit the other
engines are measured against where all ranks share a node (the GPU proof's two ranks on one GPU).

Every rank maps every other rank's buffers: device buffers through CUDA IPC (``cudaIpcGetMemHandle`` and
``cudaIpcOpenMemHandle``, the way NCCL and UCX's cuda_ipc reach a peer's memory), host buffers through an MPI shared
memory window. Then each rank sums its 1/n of the input of all ranks, reading the peers' memory directly, into its
own output (CuPy kernels on the GPU, NumPy on the host), and copies the other ranks' summed parts from their outputs:
a reduce-scatter and an allgather with no message and no staging copy, which is what the GPU's memory can do for n
ranks. MPI only exchanges the handles and orders the two steps (a barrier after each).

The buffers must be shareable, so the sweep lets this engine allocate them (``shareable``): on the GPU one
``cudaMalloc`` per buffer (an IPC handle maps a whole allocation, never a slice of CuPy's pool), on the host one MPI
window. Rank 0 also times a plain device (or host) copy of the largest buffer: the memory's own copy rate, reported
beside the engine.
"""

from __future__ import annotations

ITEMSIZE = 4
# cudaIpcMemLazyEnablePeerAccess: a peer on another GPU is mapped through peer access, one on the same GPU directly
IPC_LAZY_PEER_ACCESS = 1


class Unavailable(Exception):
    """The ipc engine cannot run here; the message says why in one line."""


def chunk_bounds(count, parts):
    """``parts`` contiguous (start, stop) ranges covering ``count`` elements, the last one taking the remainder."""
    base = count // parts
    bounds = [(index * base, (index + 1) * base) for index in range(parts)]
    bounds[-1] = (bounds[-1][0], count)
    return bounds


def node_communicator(MPI, comm):  # pylint: disable=invalid-name
    """The world, when every rank is on one node; Unavailable otherwise (collective)."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    whole = comm.allreduce(1 if node.Get_size() == comm.Get_size() else 0, op=MPI.MIN) == 1
    node.Free()
    if not whole:
        raise Unavailable('--engine ipc measures one node: its ranks map each other\'s memory, so every rank must '
                          'be on the same node (run it with the ranks of one node)')
    return comm


class _HostMemory:
    """Host buffers in MPI shared-memory windows: one window per buffer, every rank's part readable by the others."""

    def __init__(self, MPI, comm, xp):  # pylint: disable=invalid-name
        self.MPI, self.comm, self.xp = MPI, comm, xp
        # by the id of the array each window backs
        self.windows = {}

    def shareable(self, array):
        window = self.MPI.Win.Allocate_shared(array.size * ITEMSIZE, ITEMSIZE, comm=self.comm)
        shared = self._view(window, self.comm.Get_rank(), array.shape)
        shared[...] = array
        self.windows[id(shared)] = window
        return shared

    def _view(self, window, rank, shape):
        buffer = window.Shared_query(rank)[0]
        return self.xp.ndarray(buffer=buffer, dtype=self.xp.float32, shape=shape)

    def peers(self, array):
        """Every rank's buffer that corresponds to ``array`` (this rank's own included), by rank."""
        window = self.windows[id(array)]
        return [array if peer == self.comm.Get_rank() else self._view(window, peer, array.shape)
                for peer in range(self.comm.Get_size())]

    def close(self):
        for window in self.windows.values():
            window.Free()
        self.windows = {}


class _DeviceMemory:
    """Device buffers of their own cudaMalloc each, mapped into the other ranks through CUDA IPC."""

    def __init__(self, comm, xp):
        self.comm, self.xp = comm, xp
        self.opened = []

    def shareable(self, array):
        cupy = self.xp
        memory = cupy.cuda.Memory(array.size * ITEMSIZE)
        shared = cupy.ndarray(array.shape, dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(memory, 0))
        shared[...] = array
        return shared

    def peers(self, array):
        """Every rank's buffer that corresponds to ``array`` (this rank's own included), by rank (collective)."""
        cupy = self.xp
        runtime = cupy.cuda.runtime
        handles = self.comm.allgather(bytes(runtime.ipcGetMemHandle(array.data.ptr)))
        views = []
        for peer, handle in enumerate(handles):
            if peer == self.comm.Get_rank():
                views.append(array)
                continue
            pointer = runtime.ipcOpenMemHandle(handle, IPC_LAZY_PEER_ACCESS)
            self.opened.append(pointer)
            memory = cupy.cuda.UnownedMemory(pointer, array.size * ITEMSIZE, owner=None)
            views.append(cupy.ndarray(array.shape, dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(memory, 0)))
        return views

    def close(self):
        for pointer in self.opened:
            self.xp.cuda.runtime.ipcCloseMemHandle(pointer)
        self.opened = []


class IpcEngine:
    """Reduce-scatter and allgather by direct access to the other ranks' buffers (see the module's text)."""

    name = 'ipc'

    def __init__(self, ctx):
        self.ctx = ctx
        self.comm = node_communicator(ctx.MPI, ctx.comm)
        self.size = self.comm.Get_size()
        self.rank = self.comm.Get_rank()
        self.memory = (_DeviceMemory(self.comm, ctx.xp) if ctx.gpu is not None
                       else _HostMemory(ctx.MPI, self.comm, ctx.xp))
        self._mapped = {}
        self.copy_gbs = None

    def shareable(self, array):
        """A copy of ``array`` in memory the other ranks can map (collective)."""
        return self.memory.shareable(array)

    def _views(self, send, recv):
        key = (id(send), id(recv))
        if key not in self._mapped:
            # collective: every rank maps on its first call with the sweep's buffers, which are the same on every call
            self._mapped[key] = (self.memory.peers(send), self.memory.peers(recv))
        return self._mapped[key]

    def _wait(self):
        self._wait_local()
        self.comm.Barrier()

    def start_timing(self):
        """Nothing to reset: the engine reports no phases."""

    def run(self, send, recv, count):
        xp = self.ctx.xp
        inputs, outputs = self._views(send, recv)
        bounds = chunk_bounds(count, self.size)
        start, stop = bounds[self.rank]
        mine = recv[start:stop]
        if self.size == 1:
            mine[...] = inputs[0][start:stop]
        else:
            xp.add(inputs[0][start:stop], inputs[1][start:stop], out=mine)
        for other in inputs[2:]:
            xp.add(mine, other[start:stop], out=mine)
        # every part is summed before any rank reads one
        self._wait()
        for peer, (low, high) in enumerate(bounds):
            if peer != self.rank:
                recv[low:high] = outputs[peer][low:high]
        # no rank writes its part again while another still copies it
        self._wait()

    def measure_copy(self, array, iters):
        """Rank 0: the memory's own copy rate, bytes copied per second of ``array`` into a buffer of its size."""
        xp, MPI = self.ctx.xp, self.ctx.MPI  # pylint: disable=invalid-name
        if self.rank == 0:
            target = xp.empty_like(array)
            target[...] = array
            self._wait_local()
            start = MPI.Wtime()
            for _call in range(iters):
                target[...] = array
            self._wait_local()
            self.copy_gbs = array.size * ITEMSIZE * iters / max(MPI.Wtime() - start, MPI.Wtick()) / 1e9
            del target
        self.comm.Barrier()

    def _wait_local(self):
        if self.ctx.gpu is not None:
            self.ctx.xp.cuda.get_current_stream().synchronize()

    def row(self, size, iters):  # pylint: disable=unused-argument
        return {}

    def describe(self):
        where = 'CUDA IPC' if self.ctx.gpu is not None else 'an MPI shared-memory window'
        return {'algorithm': 'the node limit: each of %d ranks sums its 1/%d of every rank\'s input read through %s, '
                             'then copies the other parts from their ranks\' outputs' % (self.size, self.size, where),
                'device_copy_gbs': self.copy_gbs}

    def close(self):
        self._mapped = {}
        self.memory.close()
