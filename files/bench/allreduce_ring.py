# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The ``ring`` engine of allreduce.py: a hierarchical, rail-aligned allreduce of MPI point-to-point messages.

For a node of L ranks (one per GPU, each bound to its own NIC) in a job of N nodes:

1. reduce-scatter among the node's ranks (a ring of L): local rank l ends with segment l of the buffer, summed over
   the node;
2. one ring per local rank across the nodes (GPU l of every node, over its own NIC: the rail): segment l summed over
   every node with a ring reduce-scatter and allgather of its N sub-parts;
3. allgather among the node's ranks: every rank ends with every segment.

Every ring step sends one part to the right neighbour and receives one from the left, in up to ``pipeline`` chunks
of non-blocking sends and receives, so a chunk's sum runs while the next ones are on the wire. Device buffers (CuPy)
go to MPI as they are (CUDA-aware point-to-point) and are summed by CuPy kernels on a stream of their own; host
buffers (NumPy) are summed by NumPy. No device buffer is ever copied to host memory.

The phases run one after the other, so each is timed on its own: the inter-node phase of a rail is what that rail's
NICs, cables and switch ports carry. ``probe_links`` then times every directed link of every rail's ring on its own
(all rails at once, as in the job), so one slow port shows in the all-node run itself.
"""

from __future__ import annotations

import os
import statistics

# the phases of one call, in order
PHASES = ('intra_reduce_scatter', 'inter', 'intra_allgather')
# the launch wrapper (rank_env.sh) names the fabric rail each rank is bound to; without it a rank's rail is its local rank
RAIL_VARIABLE = 'HPCFABRIC_RAIL'
_TAG_REDUCE_SCATTER, _TAG_ALLGATHER, _TAG_PROBE = 701, 702, 703


def split(start, stop, parts):
    """``parts`` near-equal slices ``(a, b)`` of range(start, stop); the first ones one element longer where needed."""
    base, extra = divmod(stop - start, parts)
    bounds = []
    for index in range(parts):
        end = start + base + (1 if index < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def chunks(bounds, pipeline, min_elems):
    """The chunks of one part: at most ``pipeline`` of them, none shorter than ``min_elems`` unless the part is."""
    start, stop = bounds
    count = stop - start
    if count <= 0:
        return []
    pieces = max(1, min(pipeline, count // max(min_elems, 1)))
    return split(start, stop, pieces)


def rail_label():
    """This rank's rail as the launch wrapper exported it, or None."""
    value = os.environ.get(RAIL_VARIABLE, '')
    return int(value) if value.isdigit() else None


class Ring:
    """Ring reduce-scatter and allgather over one communicator; parts and chunks agree on every rank by construction."""

    def __init__(self, MPI, comm, xp, stream, pipeline, min_elems):  # pylint: disable=invalid-name,too-many-arguments
        self.MPI = MPI  # pylint: disable=invalid-name
        self.comm = comm
        self.xp = xp
        self.stream = stream
        self.size = comm.Get_size()
        self.rank = comm.Get_rank()
        self.left = (self.rank - 1) % self.size
        self.right = (self.rank + 1) % self.size
        self.pipeline = pipeline
        self.min_elems = min_elems

    def _sync(self):
        if self.stream is not None:
            self.stream.synchronize()

    def _buffer(self, array):
        return [array, self.MPI.FLOAT]

    def _part(self, parts, index):
        return parts[index % self.size]

    def _post_receives(self, tmp, part):
        """Non-blocking receives of ``part``'s chunks from the left neighbour into ``tmp``: [(request, (a, b), view)]."""
        posted = []
        for a, b in chunks(part, self.pipeline, self.min_elems):
            view = tmp[a - part[0]:b - part[0]]
            posted.append((self.comm.Irecv(self._buffer(view), source=self.left, tag=_TAG_REDUCE_SCATTER), (a, b), view))
        return posted

    def reduce_scatter(self, src, dst, tmp, start, stop):
        """Sum ``src[start:stop]`` over the ring into ``dst``: afterwards this rank's part ``rank`` of the range holds the
        total. ``src`` may be ``dst``; ``tmp`` is two banks of the longest part each.

        Step s sends part (rank - s - 1) and receives part (rank - s - 2), whose chunks are summed as they arrive and
        sent on at step s + 1; every part is received once, so every sum reads ``src`` and ``dst`` is written once per
        part.
        """
        size, rank = self.size, self.rank
        if size == 1:
            if src is not dst:
                dst[start:stop] = src[start:stop]
            return
        parts = split(start, stop, size)
        half = tmp.shape[0] // 2
        banks = (tmp[:half], tmp[half:])
        sends = [self.comm.Isend(self._buffer(src[a:b]), dest=self.right, tag=_TAG_REDUCE_SCATTER)
                 for a, b in chunks(self._part(parts, rank - 1), self.pipeline, self.min_elems)]
        pending = self._post_receives(banks[0], self._part(parts, rank - 2))
        for step in range(size - 1):
            last = step == size - 2
            # the other bank's sums (step - 1) are complete: every one was synchronised before its chunk was sent on
            following = [] if last else self._post_receives(banks[(step + 1) % 2], self._part(parts, rank - step - 3))
            for request, (a, b), view in pending:
                request.Wait()
                if self.stream is not None:
                    with self.stream:
                        self.xp.add(src[a:b], view, out=dst[a:b])
                else:
                    self.xp.add(src[a:b], view, out=dst[a:b])
                if not last:
                    # MPI reads device memory outside CUDA's stream order: the sum must be finished before the send
                    self._sync()
                    sends.append(self.comm.Isend(self._buffer(dst[a:b]), dest=self.right, tag=_TAG_REDUCE_SCATTER))
            pending = following
        self._sync()
        self.MPI.Request.Waitall(sends)

    def allgather(self, buf, start, stop):
        """Every rank holds its part ``rank`` of ``buf[start:stop]``; afterwards all of them. Each received chunk is
        forwarded as soon as it lands; all receives are posted at once (they write distinct parts)."""
        size, rank = self.size, self.rank
        if size == 1:
            return
        parts = split(start, stop, size)
        receives = [[(self.comm.Irecv(self._buffer(buf[a:b]), source=self.left, tag=_TAG_ALLGATHER), (a, b))
                     for a, b in chunks(self._part(parts, rank - step - 1), self.pipeline, self.min_elems)]
                    for step in range(size - 1)]
        sends = [self.comm.Isend(self._buffer(buf[a:b]), dest=self.right, tag=_TAG_ALLGATHER)
                 for a, b in chunks(self._part(parts, rank), self.pipeline, self.min_elems)]
        for step in range(size - 1):
            for request, (a, b) in receives[step]:
                request.Wait()
                if step < size - 2:
                    sends.append(self.comm.Isend(self._buffer(buf[a:b]), dest=self.right, tag=_TAG_ALLGATHER))
        self.MPI.Request.Waitall(sends)


class RingEngine:
    """The hierarchical ring: node rings for the reduce-scatter and allgather, rail rings between the nodes."""

    name = 'ring'

    def __init__(self, ctx, max_count, ranks_per_node=None):
        self.ctx = ctx
        MPI, comm = ctx.MPI, ctx.comm  # pylint: disable=invalid-name
        rank = comm.Get_rank()
        if ranks_per_node:
            node = comm.Split(color=rank // ranks_per_node, key=rank)
        else:
            node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
        sizes = comm.allgather(node.Get_size())
        self.uniform = min(sizes) == max(sizes)
        if not self.uniform:
            # a hostfile with uneven slots: no rail pairs every node's rank l, so one flat ring over every rank
            node.Free()
            node = MPI.COMM_SELF.Dup()
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        # every rail ring orders the nodes alike (by the world rank of their first rank), whatever the rank placement
        rail = comm.Split(color=self.local_rank, key=node.allreduce(rank, op=MPI.MIN))
        self.node_index, self.nodes = rail.Get_rank(), rail.Get_size()
        pipeline, min_elems = ctx.args.ring_pipeline, max(1, ctx.args.ring_min_chunk // 4)
        self.node_ring = Ring(MPI, node, ctx.xp, ctx.stream, pipeline, min_elems)
        self.rail_ring = Ring(MPI, rail, ctx.xp, ctx.stream, pipeline, min_elems)
        self.rail = rail_label()
        longest = -(-max_count // self.local_size) if self.local_size > 1 else -(-max_count // max(self.nodes, 1))
        self.tmp = ctx.xp.empty(2 * max(longest, 1), dtype=ctx.xp.float32)
        self.node_names = self._node_names()
        self.phase_sums = [0.0] * len(PHASES)

    def _node_names(self):
        """Each node's name (its local rank 0's host), made unique where ranks_per_node puts several on one host."""
        ctx = self.ctx
        leaders = ctx.comm.allgather((self.node_index, ctx.host) if self.local_rank == 0 else None)
        names = dict(leader for leader in leaders if leader is not None)
        counts = {}
        for host in names.values():
            counts[host] = counts.get(host, 0) + 1
        return dict((index, host if counts[host] == 1 else '%s#%d' % (host, index)) for index, host in names.items())

    def describe(self):
        """The engine's entry in the JSON's ``engines``."""
        if self.uniform:
            algorithm = ('hierarchical ring: reduce-scatter within each node (%d ranks), one ring per local rank across '
                         'the %d nodes (its rail), allgather within the node; CUDA-aware point-to-point, sums on the %s'
                         % (self.local_size, self.nodes, 'GPU (CuPy)' if self.ctx.stream is not None else 'CPU (NumPy)'))
        else:
            algorithm = ('flat ring over all %d ranks (the nodes run different numbers of ranks, so there are no rails); '
                         'sums on the %s' % (self.nodes, 'GPU (CuPy)' if self.ctx.stream is not None else 'CPU (NumPy)'))
        return {'algorithm': algorithm, 'nodes': self.nodes, 'ranks_per_node': self.local_size,
                'hierarchical': self.uniform, 'pipeline': self.ctx.args.ring_pipeline,
                'min_chunk_bytes': self.ctx.args.ring_min_chunk, 'phases': list(PHASES)}

    def start_timing(self):
        self.phase_sums = [0.0] * len(PHASES)

    def run(self, send, recv, count):
        """One allreduce of ``send[:count]`` into ``recv[:count]``."""
        wtime = self.ctx.MPI.Wtime
        t0 = wtime()
        segments = split(0, count, self.local_size)
        if self.local_size > 1:
            self.node_ring.reduce_scatter(send, recv, self.tmp, 0, count)
        t1 = wtime()
        a, b = segments[self.local_rank]
        if self.nodes > 1:
            self.rail_ring.reduce_scatter(recv if self.local_size > 1 else send, recv, self.tmp, a, b)
            self.rail_ring.allgather(recv, a, b)
        elif self.local_size == 1:
            recv[:count] = send[:count]
        t2 = wtime()
        if self.local_size > 1:
            self.node_ring.allgather(recv, 0, count)
        t3 = wtime()
        for index, seconds in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            self.phase_sums[index] += seconds

    def row(self, size, iters):
        """Collective: the phases (slowest rank, µs per call) and each rail's inter-node bus bandwidth at this size."""
        comm = self.ctx.comm
        means = [total / iters for total in self.phase_sums]
        count = size // 4
        a, b = split(0, count, self.local_size)[self.local_rank]
        mine = (self.local_rank, self.rail, means, (b - a) * 4)
        everyone = comm.gather(mine, root=0)
        if comm.Get_rank() != 0:
            return {}
        phases = dict((name, max(entry[2][index] for entry in everyone) * 1e6) for index, name in enumerate(PHASES))
        rails = []
        for local_rank in range(self.local_size):
            members = [entry for entry in everyone if entry[0] == local_rank]
            seconds = max(entry[2][1] for entry in members)
            labels = sorted(set(entry[1] for entry in members), key=lambda label: (label is None, label))
            segment = members[0][3]
            moved = 2.0 * (self.nodes - 1) / self.nodes * segment if self.nodes > 1 else 0.0
            rails.append({'local_rank': local_rank, 'rail': labels[0] if len(labels) == 1 else None,
                          'rails_seen': labels, 'segment_bytes': segment, 'inter_us': seconds * 1e6,
                          'busbw_gbs': moved / seconds / 1e9 if seconds > 0 and moved else None})
        return {'phases_us': phases, 'rails': rails}

    def probe_links(self, send, recv, nbytes, reps):
        """Time every directed link of every rail ring on its own, all rails at once: rank i sends ``nbytes`` to its
        right neighbour, then to its left one (with 3 nodes or more), and times its own receive. Collective; rank 0
        returns ``[{rail, local_rank, src, dst, bytes, gbs}]`` (the median of ``reps`` exchanges), others None."""
        ctx, ring = self.ctx, self.rail_ring
        if ring.size < 2 or nbytes < 4:
            return [] if ctx.comm.Get_rank() == 0 else None
        count = nbytes // 4
        directions = [(ring.left, ring.right)] + ([(ring.right, ring.left)] if ring.size > 2 else [])
        measured = []
        for source, dest in directions:
            times = []
            for _rep in range(reps):
                ctx.comm.Barrier()
                began = ctx.MPI.Wtime()
                receive = ring.comm.Irecv([recv[:count], ctx.MPI.FLOAT], source=source, tag=_TAG_PROBE)
                outgoing = ring.comm.Isend([send[:count], ctx.MPI.FLOAT], dest=dest, tag=_TAG_PROBE)
                receive.Wait()
                times.append(ctx.MPI.Wtime() - began)
                outgoing.Wait()
            measured.append((self.node_names[source], statistics.median(times)))
        here = self.node_names[self.node_index]
        entries = ctx.comm.gather([(self.rail, self.local_rank, src, here, seconds) for src, seconds in measured], root=0)
        if ctx.comm.Get_rank() != 0:
            return None
        return [{'rail': rail, 'local_rank': local_rank, 'src': src, 'dst': dst, 'bytes': count * 4,
                 'gbs': count * 4 / seconds / 1e9 if seconds > 0 else None}
                for group in entries for rail, local_rank, src, dst, seconds in group]
