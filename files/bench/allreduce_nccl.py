# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The ``nccl`` engine of allreduce.py: NCCL's ncclAllReduce through CuPy's NCCL bindings (``cupy.cuda.nccl``).

Rank 0 makes the unique id and broadcasts it over mpi4py; every rank joins with ncclCommInitRank on its GPU, so the
same mpirun that starts the MPI engines starts this one, with the same job environment (NCCL_IB_HCA, NCCL_IB_TC,
NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME). What NCCL says it chose is recorded, not assumed: unless the job sets
NCCL_DEBUG itself, NCCL's INFO lines of the INIT, ENV and NET subsystems go to one file per rank, and the lines that
name the network, the HCAs, the GID index and the traffic class are returned with the engine's description.

CuPy's wheels load libnccl.so.2 from the ``nvidia-nccl-cuXX`` wheel when it is installed beside them (CuPy 13+).
"""

from __future__ import annotations

import os
import re
import tempfile

# NCCL 2.30 lets two ranks share a GPU when asked (NCCL_MULTI_RANK_GPU_ENABLE=1); older ones stop with "Duplicate GPU
# detected"
MULTI_RANK_GPU_VERSION = (2, 30, 0)
MULTI_RANK_GPU_VARIABLE = 'NCCL_MULTI_RANK_GPU_ENABLE'
# the INFO lines worth keeping: the transport, the devices and how they are addressed, the environment NCCL read
DEBUG_KEEP = re.compile(r'NCCL INFO (NET/|Using network|NCCL_[A-Z0-9_]+ set|.*\bnRanks\b|.*GID|.*[Tt]raffic class|'
                        r'Bootstrap|cudaDriverVersion)')
# one rank's kept lines at most: the JSON stays small at thousands of ranks
DEBUG_LINES_PER_RANK = 40


class Unavailable(Exception):
    """NCCL cannot run here; the message says why in one line."""


def version_tuple(code):
    """ncclGetVersion's integer (22809, or 2708 before 2.9) as (major, minor, patch)."""
    if code >= 10000:
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


def nccl_module(device):
    """CuPy's NCCL module, or Unavailable."""
    if device != 'cuda':
        raise Unavailable('--engine nccl needs --device cuda: NCCL reduces GPU buffers only')
    try:
        from cupy.cuda import nccl  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise Unavailable('--engine nccl needs CuPy\'s NCCL bindings, which do not import (%s)' % exc) from None
    if not getattr(nccl, 'available', False):
        raise Unavailable('--engine nccl: CuPy finds no NCCL library: install nvidia-nccl-cu<CUDA major> beside '
                          'cupy-cuda<CUDA major>x (or NCCL where the loader finds libnccl.so.2)')
    return nccl


def kept_debug_lines(text):
    """The NCCL INFO lines that say what NCCL chose, without the host:pid:tid prefix, at most DEBUG_LINES_PER_RANK."""
    kept = []
    for line in text.splitlines():
        match = DEBUG_KEEP.search(line)
        if match:
            kept.append(line[match.start():].strip())
    return kept[:DEBUG_LINES_PER_RANK]


class NcclEngine:
    """ncclAllReduce (sum, float32) on the rank's GPU, on a stream of its own. Collective: build it on every rank once
    ``nccl_module`` worked on every rank; it raises Unavailable on every rank alike (two ranks on one GPU)."""

    name = 'nccl'

    def __init__(self, ctx):
        self.ctx = ctx
        self.nccl = nccl_module(ctx.device)
        self.version = version_tuple(self.nccl.get_version())
        self.notes = []
        self._share_gpus()
        self.debug_dir = self._capture_debug()
        unique_id = ctx.comm.bcast(self.nccl.get_unique_id() if ctx.comm.Get_rank() == 0 else None, root=0)
        self.comm = self.nccl.NcclCommunicator(ctx.comm.Get_size(), unique_id, ctx.comm.Get_rank())
        self.stream = ctx.xp.cuda.Stream(non_blocking=True)
        self.debug = self._read_debug()

    def _share_gpus(self):
        """Two ranks on one GPU: allowed from NCCL 2.30 when asked, refused in one line before."""
        ctx = self.ctx
        bus_id = ctx.xp.cuda.Device(ctx.gpu).pci_bus_id
        seen = ctx.comm.allgather((ctx.host, bus_id))
        if len(set(seen)) == len(seen):
            return
        if self.version < MULTI_RANK_GPU_VERSION:
            raise Unavailable('--engine nccl: NCCL %s refuses two ranks on one GPU ("Duplicate GPU detected"); NCCL 2.30 '
                              'or later runs them with %s=1, or run one rank per GPU'
                              % ('.'.join(map(str, self.version)), MULTI_RANK_GPU_VARIABLE))
        if os.environ.get(MULTI_RANK_GPU_VARIABLE) is None:
            os.environ[MULTI_RANK_GPU_VARIABLE] = '1'
            self.notes.append('two ranks share a GPU: %s=1 set for NCCL %s'
                              % (MULTI_RANK_GPU_VARIABLE, '.'.join(map(str, self.version))))

    def _capture_debug(self):
        """Send NCCL's INFO lines to a file of this rank's, unless the job asked for NCCL_DEBUG itself."""
        if 'NCCL_DEBUG' in os.environ:
            self.notes.append('NCCL_DEBUG=%s set by the job: NCCL\'s own lines are not captured'
                              % os.environ['NCCL_DEBUG'])
            return None
        directory = tempfile.mkdtemp(prefix='hpcfabric-nccl-')
        os.environ.update({'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,ENV,NET',
                           'NCCL_DEBUG_FILE': os.path.join(directory, 'nccl.%h.%p')})
        return directory

    def _read_debug(self):
        """Collective: rank 0 gets ``{host: [lines]}`` of the first rank on each host that captured any."""
        lines = []
        if self.debug_dir is not None:
            for name in sorted(os.listdir(self.debug_dir)):
                with open(os.path.join(self.debug_dir, name), errors='replace') as handle:
                    lines.extend(kept_debug_lines(handle.read()))
                os.unlink(os.path.join(self.debug_dir, name))
            os.rmdir(self.debug_dir)
        gathered = self.ctx.comm.gather((self.ctx.host, lines), root=0)
        if gathered is None:
            return None
        per_host = {}
        for host, kept in gathered:
            if kept and host not in per_host:
                per_host[host] = kept
        return per_host

    def describe(self):
        return {'algorithm': "NCCL's ncclAllReduce (it picks ring, tree or NVLS itself; NCCL_ALGO overrides)",
                'version': '.'.join(map(str, self.version)), 'bindings': 'cupy.cuda.nccl',
                'debug': self.debug, 'notes': self.notes}

    def start_timing(self):
        """Nothing to reset: NCCL reports no phases."""

    def run(self, send, recv, count):
        self.comm.allReduce(send.data.ptr, recv.data.ptr, count, self.nccl.NCCL_FLOAT32, self.nccl.NCCL_SUM,
                            self.stream.ptr)
        self.stream.synchronize()

    def row(self, size, iters):  # pylint: disable=unused-argument
        return {}
