# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Allreduce (sum, float32) bandwidth sweep of one or more engines, every result checked, for mpirun.

Run one rank per GPU (or per core with --device cpu):

    mpirun --hostfile HOSTFILE python3 allreduce.py --device cuda --engine ring,mpi --max-bytes 1G --json out.json

Engines (--engine, a comma list runs each in turn in the same launch):
  ring  a hierarchical, rail-aligned ring of CUDA-aware point-to-point messages with the sums on the GPU (CuPy) or
        the CPU (NumPy): reduce-scatter within each node, one ring per local rank across the nodes (its rail),
        allgather within the node (allreduce_ring.py); it times each phase and each rail, then every link of every rail
  mpi   the MPI library's MPI_Allreduce, what an MPI application gets; Open MPI says which coll component serves it
  nccl  NCCL's ncclAllReduce through CuPy's NCCL bindings, the unique id broadcast over MPI (allreduce_nccl.py)
  ipc   one node's limit: every rank sums its part of all ranks' buffers read through CUDA IPC (an MPI shared-memory
        window on the host), then copies the others' parts (allreduce_ipc.py); it also times a device copy

Numbers follow nccl-tests: the time of a size is the slowest rank's mean time per call,
algbw = bytes / time and busbw = algbw * 2(n-1)/n (0 for a single rank, as in nccl-tests).
Exit status: 0 every result correct, 1 a result was wrong (the JSON is still written), 2 bad arguments or an
unusable environment (no mpi4py, no CuPy, no GPU, MPI known not to be CUDA-aware, an engine that cannot run here).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import sys
import threading

# the values each rank contributes repeat with this period along the buffer, so the expected sum is a short pattern
PERIOD = 8
ITEMSIZE = 4  # float32
SIZE_SUFFIXES = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}
# launchers put the rank in the environment; used only to keep argparse from printing once per rank
RANK_VARIABLES = ('OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'PMI_RANK', 'SLURM_PROCID')
# a wrong sum is wrong on every rank: name a few, count the rest, so the JSON stays small at thousands of ranks
MAX_ERRORS_PER_SIZE = 4
PROG = os.path.basename(sys.argv[0]) or 'allreduce.py'
# in the order --engine lists them when asked for all
ENGINES = ('ring', 'mpi', 'nccl', 'ipc')
# the launch wrapper (rank_env.sh) names the GPU of each rank of an all-node job, from the cluster model
GPU_VARIABLE = 'HPCFABRIC_GPU'
# the link probe's message: the largest size's share of one rank, at most this
PROBE_MAX_BYTES = 256 * 1024 ** 2
# the job environment a rank reports (what UCX, NCCL and the launch wrapper read; not OMPI_MCA_*, which the launcher
# sets per rank), and the part of it that binds a rank
JOB_ENV_PREFIXES = ('UCX_', 'NCCL_', 'HPCFABRIC_')
JOB_ENV_NAMES = ('CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER')
BINDING_NAMES = ('UCX_NET_DEVICES', 'HPCFABRIC_GPU', 'HPCFABRIC_RAIL', 'CUDA_VISIBLE_DEVICES')
# Open MPI prints the coll components it enables on each communicator at this verbosity, nothing else
COLL_VERBOSE_VARIABLE, COLL_VERBOSE_LEVEL = 'OMPI_MCA_coll_base_verbose', '9'
COLL_SELECTING_RE = re.compile(r'coll:base:comm_select: selecting\s+(\S+), priority\s+(-?\d+), (Enabled|Disabled)')
COLL_COMMUNICATOR_RE = re.compile(r'coll:base:comm_select: new communicator: (\S+)')
# what coll_base_verbose 9 prints: the base's selection lines and the components' own about a communicator
COLL_LINE_RE = re.compile(r'^\[[^\]]*\] (coll:|\(\d+/.*\): )')
# Open MPI's coll components that implement a blocking MPI_Allreduce; the highest priority enabled one serves it
# (sync and monitoring wrap the next one; adapt, libnbc and ftagree have none)
ALLREDUCE_COMPONENTS = ('accelerator', 'acoll', 'basic', 'cuda', 'han', 'hcoll', 'inter', 'portals4', 'self', 'sm',
                        'tuned', 'ucc', 'xhc')
COMPONENT_NOTES = {
    'cuda': 'stages device buffers through host memory and reduces on the CPU',
    'accelerator': 'stages device buffers through host memory and reduces on the CPU',
    'ucc': 'UCC reduces device buffers on the GPU (it may hand a call it does not support to the next component)',
}


class EnvironmentProblem(Exception):
    """Something this rank needs is missing: reported once by rank 0, exit 2 on every rank."""


def launcher_rank():
    """This process's rank as the launcher announced it (0 when run without one)."""
    for name in RANK_VARIABLES:
        if os.environ.get(name, '').isdigit():
            return int(os.environ[name])
    return 0


class RankZeroParser(argparse.ArgumentParser):
    """An ArgumentParser that prints usage and errors on rank 0 only; every rank still exits."""

    def _print_message(self, message, file=None):
        if launcher_rank() == 0:
            super()._print_message(message, file)


def parse_size(text):
    """'4096', '1K', '8M', '1G' (also '8MB', '8m') to bytes; sizes are multiples of the float32 element."""
    match = re.match(r'^\s*(\d+)\s*([KMG]?)B?\s*$', text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError("%r is not a size: use bytes or a K, M or G suffix (1024-based), e.g. 8M" % text)
    size = int(match.group(1)) * SIZE_SUFFIXES[match.group(2).upper()]
    if size < ITEMSIZE or size % ITEMSIZE:
        raise argparse.ArgumentTypeError('%r: sizes must be a positive multiple of %d bytes (float32 elements)' % (text, ITEMSIZE))
    return size


def _int_at_least(low, rule):
    """An argparse type: an integer >= low; ``rule`` says so in the error."""
    def convert(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError('%r is not an integer' % text) from None
        if value < low:
            raise argparse.ArgumentTypeError('%r: %s' % (text, rule))
        return value
    return convert


positive_int = _int_at_least(1, 'must be at least 1')
non_negative_int = _int_at_least(0, 'must not be negative')


def parse_engines(text):
    """'ring,mpi' to ['ring', 'mpi'], in the given order, each once; 'all' for every engine."""
    if text.strip() == 'all':
        return list(ENGINES)
    names = [name.strip() for name in text.split(',') if name.strip()]
    unknown = [name for name in names if name not in ENGINES]
    if unknown or not names:
        raise argparse.ArgumentTypeError('%r: engines are a comma list of %s (or all)' % (text, ', '.join(ENGINES)))
    return list(dict.fromkeys(names))


def probe_size(text):
    """A size, or 0 for no link probe."""
    return 0 if text.strip() == '0' else parse_size(text)


def parse_args(argv=None):
    """Command line; argparse exits 2 on bad arguments."""
    parser = RankZeroParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--device', choices=['cuda', 'cpu'], default='cuda',
                        help='cuda: CuPy device buffers handed straight to MPI (needs CUDA-aware MPI); cpu: NumPy host buffers')
    parser.add_argument('--engine', type=parse_engines, default=['ring'], metavar='ENGINES',
                        help='comma list of %s, or all (default ring); each runs the whole sweep in turn' % ', '.join(ENGINES))
    parser.add_argument('--min-bytes', type=parse_size, default=parse_size('1M'), help='smallest message (default 1M)')
    parser.add_argument('--max-bytes', type=parse_size, default=parse_size('64M'),
                        help='largest message (default 64M); sizes double from --min-bytes while they stay <= this')
    parser.add_argument('--iters', type=positive_int, default=20, help='timed calls per size (default 20)')
    parser.add_argument('--warmup', type=non_negative_int, default=5, help='untimed calls per size before timing (default 5)')
    parser.add_argument('--json', metavar='PATH', help='write the results here (rank 0)')
    parser.add_argument('--ranks-per-node', type=positive_int, metavar='N',
                        help='ring: group every N consecutive ranks as one node instead of the ranks that share memory '
                             '(runs the node phases of the ring on one host, as the tests do)')
    parser.add_argument('--ring-pipeline', type=positive_int, default=4, metavar='N',
                        help='ring: chunks per ring step at most (default 4), so that sums overlap transfers')
    parser.add_argument('--ring-min-chunk', type=parse_size, default=parse_size('256K'), metavar='SIZE',
                        help='ring: no chunk below this unless the part is (default 256K)')
    parser.add_argument('--probe-bytes', type=probe_size, metavar='SIZE',
                        help="ring: each link probe message (default: the largest size's share of one rank, at most "
                             "256M; 0: no probe)")
    parser.add_argument('--assume-cuda-aware', action='store_true',
                        help='with --device cuda, run even when MPIX_Query_cuda_support() says 0 (some UCX builds under-report); '
                             'the correctness check still guards every result')
    parser.add_argument('--inject-wrong-result', nargs='?', const='all', type=parse_engines, metavar='ENGINES',
                        help='for testing the validation only: the last rank corrupts its input of these engines (default '
                             'all) so that their largest size is wrong')
    args = parser.parse_args(argv)
    if args.min_bytes > args.max_bytes:
        parser.error('--min-bytes (%d) is larger than --max-bytes (%d)' % (args.min_bytes, args.max_bytes))
    return args


def sweep_sizes(min_bytes, max_bytes):
    """The message sizes: min, 2*min, 4*min, ... while <= max (nccl-tests' -f 2)."""
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def bus_factor(world_size):
    """nccl-tests' allreduce bus bandwidth factor 2(n-1)/n: 0 for one rank, which moves nothing."""
    return 2.0 * (world_size - 1) / world_size


def rank_pattern(rank):
    """The PERIOD values a rank contributes: small integers, so any float32 sum of them is exact."""
    return [1.0 + (k + rank) % PERIOD for k in range(PERIOD)]


def expected_pattern(world_size):
    """The PERIOD values of the correct sum over all ranks, in closed form (no loop over ranks)."""
    full, rest = divmod(world_size, PERIOD)
    cycle = sum(range(PERIOD))
    return [world_size + full * cycle + sum((k + j) % PERIOD for j in range(rest)) for k in range(PERIOD)]


def libmpi_cuda_support():
    """MPIX_Query_cuda_support() of the libmpi this process has loaded: True/False, or None where it cannot be asked.

    mpi4py does not wrap the Open MPI (and MVAPICH2) extension, so the function is looked up in the very library
    mpi4py mapped into this process. Only a definite 0 or 1 counts.
    """
    try:
        with open('/proc/self/maps') as maps:
            paths = sorted({line.split()[-1] for line in maps if re.search(r'/libmpi\.so[.\d]*$', line.strip())})
    except OSError:
        return None
    for path in paths:
        try:
            query = getattr(ctypes.CDLL(path), 'MPIX_Query_cuda_support', None)
        except OSError:
            continue
        if query is not None:
            query.restype = ctypes.c_int
            value = query()
            return {0: False, 1: True}.get(value)
    return None


class CollSelectionFilter:
    """Rank 0's standard error with the coll selection Open MPI prints on every new communicator (asked for on the
    launcher's rank 0 only) taken out and kept: a thread forwards every other line as it comes."""

    def __init__(self):
        self._kept = []
        self._saved = None
        self._thread = None
        self._marker = None
        self._seen = threading.Event()

    def start(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self._thread = threading.Thread(target=self._pump, args=(read_end,), daemon=True)
        self._thread.start()

    def _pump(self, read_end):
        with os.fdopen(read_end, 'rb') as pipe:
            for line in pipe:
                text = line.decode('utf-8', 'replace')
                if self._marker is not None and self._marker in text:
                    self._seen.set()
                elif COLL_LINE_RE.search(text):
                    self._kept.append(text)
                else:
                    os.write(self._saved, line)

    def text(self):
        """Everything kept so far: waits until the thread has read what was written before this call."""
        if self._thread is None:
            return ''
        self._marker = 'hpcfabric-allreduce-marker-%d' % os.getpid()
        sys.stderr.flush()
        os.write(2, (self._marker + '\n').encode())
        self._seen.wait(10)
        return ''.join(self._kept)

    def stop(self):
        if self._saved is None:
            return
        sys.stderr.flush()
        # the pipe's only write end was fd 2: replacing it ends the thread's loop
        os.dup2(self._saved, 2)
        self._thread.join(10)
        os.close(self._saved)
        self._saved = None


def coll_selection(text, communicator='MPI_COMM_WORLD'):
    """The coll components Open MPI enabled on ``communicator`` (its first creation) from coll_base_verbose >= 9
    output: [(component, priority)] in the order printed (lowest priority first), None where the text has none."""
    current, found = None, None
    for line in text.splitlines():
        match = COLL_COMMUNICATOR_RE.search(line)
        if match:
            if found is not None:
                break
            current = match.group(1)
            if current == communicator:
                found = []
            continue
        match = COLL_SELECTING_RE.search(line)
        if match and current == communicator and found is not None and match.group(3) == 'Enabled':
            found.append((match.group(1), int(match.group(2))))
    return found


def allreduce_component(enabled):
    """The component that takes MPI_Allreduce: the highest priority enabled one that implements it, or None."""
    serving = [(priority, name) for name, priority in enabled or [] if name in ALLREDUCE_COMPONENTS]
    return max(serving)[1] if serving else None


class Context:  # pylint: disable=too-few-public-methods
    """What every engine works with: MPI, the world communicator, the array module and this rank's GPU and host."""

    def __init__(self, MPI, comm, xp, gpu, host, args):  # pylint: disable=invalid-name,too-many-arguments
        self.MPI = MPI  # pylint: disable=invalid-name
        self.comm = comm
        self.xp = xp
        self.gpu = gpu
        self.host = host
        self.args = args
        self.device = args.device
        self.stream = xp.cuda.Stream(non_blocking=True) if gpu is not None else None


class MpiEngine:
    """The library's MPI_Allreduce on the buffers as they are (device buffers straight to a CUDA-aware MPI)."""

    name = 'mpi'

    def __init__(self, ctx):
        self.ctx = ctx
        self.enabled = None

    def read_selection(self, text):
        """What Open MPI printed of its coll selection on rank 0 (CollSelectionFilter)."""
        self.enabled = coll_selection(text)

    def describe(self):
        component = allreduce_component(self.enabled)
        entry = {'algorithm': "the MPI library's MPI_Allreduce (%s)" % library_version(self.ctx.MPI).splitlines()[0],
                 'component': component, 'components': [list(item) for item in self.enabled or []]}
        if self.enabled is None:
            entry['component_source'] = None
            entry['note'] = ('the serving component is known for Open MPI only, when the job does not set '
                             '%s itself' % COLL_VERBOSE_VARIABLE)
        else:
            entry['component_source'] = "Open MPI's coll selection on MPI_COMM_WORLD (coll_base_verbose %s)" % COLL_VERBOSE_LEVEL
            entry['note'] = COMPONENT_NOTES.get(component)
        return entry

    def start_timing(self):
        """Nothing to reset: MPI_Allreduce reports no phases."""

    def run(self, send, recv, count):
        MPI = self.ctx.MPI  # pylint: disable=invalid-name
        self.ctx.comm.Allreduce([send[:count], MPI.FLOAT], [recv[:count], MPI.FLOAT], op=MPI.SUM)

    def row(self, size, iters):  # pylint: disable=unused-argument
        return {}


def import_mpi(capture=None):
    """mpi4py's MPI module (initialises MPI), or an EnvironmentProblem naming the interpreter. With ``capture`` (a
    CollSelectionFilter), Open MPI is asked to print its coll selection into it; the caller stops it."""
    if capture is not None:
        os.environ[COLL_VERBOSE_VARIABLE] = COLL_VERBOSE_LEVEL
        capture.start()
    try:
        import mpi4py  # pylint: disable=import-outside-toplevel
        # only the main thread calls MPI; mpi4py's default, THREAD_MULTIPLE, adds locking in some libraries and
        # rules out some transports (Open MPI's openib)
        mpi4py.rc.thread_level = 'funneled'
        from mpi4py import MPI  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise EnvironmentProblem('mpi4py is not importable by %s (%s): install python3-mpi4py or mpi4py for this MPI'
                                 % (sys.executable, exc)) from None
    return MPI


def array_module(device, local_rank):
    """NumPy, or CuPy with this rank's GPU selected: HPCFABRIC_GPU where the launch wrapper set it (the cluster model's
    GPU of this local rank), else the local rank modulo the visible GPUs; EnvironmentProblem if there is none."""
    import numpy  # pylint: disable=import-outside-toplevel
    if device == 'cpu':
        return numpy, None
    try:
        import cupy  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise EnvironmentProblem('--device cuda needs CuPy, which %s cannot import (%s): install cupy-cuda12x '
                                 '(or use --device cpu)' % (sys.executable, exc)) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise EnvironmentProblem('--device cuda: no usable GPU (%s)' % exc) from None
    if count < 1:
        raise EnvironmentProblem('--device cuda: no GPU is visible (CUDA_VISIBLE_DEVICES=%r)' % os.environ.get('CUDA_VISIBLE_DEVICES'))
    chosen = os.environ.get(GPU_VARIABLE, '')
    gpu = int(chosen) if chosen.isdigit() else local_rank % count
    if gpu >= count:
        raise EnvironmentProblem('--device cuda: %s=%s names a GPU this rank does not see (%d visible)' % (GPU_VARIABLE, chosen, count))
    cupy.cuda.Device(gpu).use()
    return cupy, gpu


def synchronize(xp):
    """Wait for this rank's GPU work (no-op for NumPy), so timings and checks see finished results."""
    if xp.__name__ == 'cupy':
        xp.cuda.get_current_stream().synchronize()


def describe(ranks):
    """'0-3,7' for a list of rank numbers."""
    ranks = sorted(ranks)
    spans = []
    start = prev = ranks[0]
    for rank in ranks[1:] + [None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        spans.append(str(start) if start == prev else '%d-%d' % (start, prev))
        if rank is not None:
            start = prev = rank
    return ','.join(spans)


def agree_on_problems(comm, host, problem):
    """Every rank learns whether any rank hit a problem; rank 0 prints each distinct one once. True if any."""
    problems = comm.allgather(str(problem) if problem else None)
    if not any(problems):
        return False
    hosts = comm.gather(host, root=0)
    if comm.Get_rank() == 0:
        seen = {}
        for rank, text in enumerate(problems):
            if text:
                seen.setdefault(text, []).append(rank)
        for text, ranks in seen.items():
            where = sorted({hosts[r] for r in ranks})
            print('%s: error: %s (rank%s %s on %s)' % (PROG, text, 's' if len(ranks) > 1 else '', describe(ranks), ','.join(where)),
                  file=sys.stderr)
    return True


def check_result(recv, expected, count):
    """(number of wrong elements, first wrong index, value there, expected there) for recv[:count]."""
    wrong = recv[:count] != expected[:count]
    nwrong = int(wrong.sum())
    if not nwrong:
        return 0, None, None, None
    index = int(wrong.argmax())
    return nwrong, index, float(recv[index]), float(expected[index])


def job_environment(comm, host, local_rank):
    """Collective: on rank 0, what the ranks ran with - ``{host, ranks: [{local_rank, variables}], differs_on}``: every
    rank of rank 0's node, and the hosts where a rank's variables other than its binding differ from rank 0's."""
    mine = dict((name, value) for name, value in os.environ.items()
                if name.startswith(JOB_ENV_PREFIXES) or name in JOB_ENV_NAMES)
    everyone = comm.gather((host, local_rank, mine), root=0)
    if everyone is None:
        return None
    first = everyone[0]

    def unbound(variables):
        return dict((name, value) for name, value in variables.items() if name not in BINDING_NAMES)
    return {'host': first[0],
            'ranks': [{'local_rank': rank, 'variables': variables} for name, rank, variables in everyone if name == first[0]],
            'differs_on': sorted(set(name for name, dummy, variables in everyone
                                     if unbound(variables) != unbound(first[2])))}


def build_engines(ctx, names, max_count):
    """The engines asked for, in order, or None after rank 0 said why one cannot run here (collective)."""
    # beside this script, which Python puts first on sys.path
    import allreduce_ipc  # pylint: disable=import-outside-toplevel
    import allreduce_nccl  # pylint: disable=import-outside-toplevel
    from allreduce_ring import RingEngine  # pylint: disable=import-outside-toplevel
    problem = None
    if 'nccl' in names:
        try:
            allreduce_nccl.nccl_module(ctx.device)
        except allreduce_nccl.Unavailable as exc:
            problem = exc
    if agree_on_problems(ctx.comm, ctx.host, problem):
        return None
    engines = []
    for name in names:
        if name == 'ring':
            engines.append(RingEngine(ctx, max_count, ctx.args.ranks_per_node))
        elif name == 'mpi':
            engines.append(MpiEngine(ctx))
        elif name == 'ipc':
            try:
                engines.append(allreduce_ipc.IpcEngine(ctx))
            except allreduce_ipc.Unavailable as exc:
                # raised on every rank alike (a collective answer)
                agree_on_problems(ctx.comm, ctx.host, exc)
                return None
        else:
            try:
                engines.append(allreduce_nccl.NcclEngine(ctx))
            except allreduce_nccl.Unavailable as exc:
                # raised on every rank alike (what every rank gathered)
                agree_on_problems(ctx.comm, ctx.host, exc)
                return None
    return engines


def probe_bytes(args, engine):
    """The link probe's message: --probe-bytes, else the largest size's share of one rank of a node, at most 256M."""
    if args.probe_bytes is not None:
        return args.probe_bytes
    share = args.max_bytes // engine.local_size
    return max(ITEMSIZE, min(PROBE_MAX_BYTES, share - share % ITEMSIZE))


def run_sweep(ctx, engines, args):  # pylint: disable=too-many-locals
    """Time and check every size of every engine; returns (results, errors, links) on rank 0 (identical verdicts on
    every rank); links are the ring's per-link probe, None without a ring."""
    MPI, comm, xp, host = ctx.MPI, ctx.comm, ctx.xp, ctx.host  # pylint: disable=invalid-name
    rank, world = comm.Get_rank(), comm.Get_size()
    sizes = sweep_sizes(args.min_bytes, args.max_bytes)
    max_count = sizes[-1] // ITEMSIZE
    reps = -(-max_count // PERIOD)
    send = xp.tile(xp.asarray(rank_pattern(rank), dtype=xp.float32), reps)[:max_count]
    expected = xp.tile(xp.asarray(expected_pattern(world), dtype=xp.float32), reps)[:max_count]
    recv = xp.empty_like(send)
    # an engine that maps the other ranks' buffers (ipc) allocates them, for every engine alike
    for engine in engines:
        if hasattr(engine, 'shareable'):
            send, recv = engine.shareable(send), engine.shareable(recv)
            break
    synchronize(xp)
    factor = bus_factor(world)
    inject = set(args.inject_wrong_result or [])
    results, errors, links = [], [], None
    for engine in engines:
        corrupt = engine.name in inject and rank == world - 1
        if corrupt:
            # after the expected values exist, so the check below fails for real; only the largest size reads it
            send[max_count - 1] += 1
        for size in sizes:
            count = size // ITEMSIZE
            # a call that writes nothing must not pass on the previous size's (or engine's) correct values
            recv[:count] = -1
            synchronize(xp)
            comm.Barrier()
            for _call in range(args.warmup):
                engine.run(send, recv, count)
            synchronize(xp)
            comm.Barrier()
            engine.start_timing()
            start = MPI.Wtime()
            for _call in range(args.iters):
                engine.run(send, recv, count)
            synchronize(xp)
            # never below the clock's resolution, so a size too small to time cannot divide by zero
            elapsed = max(comm.allreduce((MPI.Wtime() - start) / args.iters, op=MPI.MAX), MPI.Wtick())
            nwrong, index, got, want = check_result(recv, expected, count)
            message = None
            if nwrong:
                message = ('%s: size %d: rank %d on %s got %s at index %d, expected %s (%d of %d elements wrong)'
                           % (engine.name, size, rank, host, got, index, want, nwrong, count))
            messages = comm.gather(message, root=0)
            correct = comm.allreduce(0 if nwrong else 1, op=MPI.MIN) == 1
            algbw = size / elapsed / 1e9
            row = {'engine': engine.name, 'size_bytes': size, 'count': count, 'time_us': elapsed * 1e6,
                   'algbw_gbs': algbw, 'busbw_gbs': algbw * factor, 'correct': correct}
            row.update(engine.row(size, args.iters) or {})
            results.append(row)
            if rank == 0:
                wrong = [m for m in messages if m]
                errors.extend(wrong[:MAX_ERRORS_PER_SIZE])
                if len(wrong) > MAX_ERRORS_PER_SIZE:
                    errors.append('%s: size %d: %d more ranks got wrong results' % (engine.name, size, len(wrong) - MAX_ERRORS_PER_SIZE))
        if corrupt:
            send[max_count - 1] -= 1
            synchronize(xp)
        if engine.name == 'ring':
            links = engine.probe_links(send, recv, probe_bytes(args, engine), min(args.iters, 10))
        if engine.name == 'ipc':
            engine.measure_copy(send, min(args.iters, 10))
    return results, errors, links


def print_table(report):
    """The human-readable sweep, nccl-tests style, one block per engine."""
    mpi = report['mpi']
    print('# allreduce sum float32  ranks %d  device %s  hosts %s' % (report['world_size'], report['device'], ','.join(report['hosts'])))
    library = mpi['library_version'].splitlines()[0] if mpi['library_version'] else '?'
    print('# %s  cuda_aware %s' % (library, {True: 'yes', False: 'no', None: 'unknown'}[mpi['cuda_aware']]))
    for name, engine in report['engines'].items():
        print('# engine %s: %s' % (name, engine['algorithm']))
        if engine.get('component'):
            print('#   MPI_Allreduce served by coll/%s%s' % (engine['component'], ': %s' % engine['note'] if engine.get('note') else ''))
        print('# %12s %12s %12s %12s %12s  %s' % ('size(B)', 'count', 'time(us)', 'algbw(GB/s)', 'busbw(GB/s)', 'check'))
        for row in report['results']:
            if row['engine'] == name:
                print('  %12d %12d %12.2f %12.3f %12.3f  %s' % (
                    row['size_bytes'], row['count'], row['time_us'], row['algbw_gbs'], row['busbw_gbs'],
                    'ok' if row['correct'] else 'WRONG'))
        for link in sorted(engine.get('links') or [], key=lambda item: item['gbs'] or 0)[:3]:
            print('#   slowest link: rail %s %s -> %s %.3f GB/s' % (
                link['rail'] if link['rail'] is not None else '?', link['src'], link['dst'], link['gbs'] or 0))
    for error in report['errors']:
        print('# wrong result: %s' % error)
    print('# %s' % ('all results correct' if report['correct'] else 'WRONG RESULTS'))
    sys.stdout.flush()


def write_json(path, report):
    """Write atomically, so a reader never sees half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
        handle.write('\n')
    os.replace(tmp, path)


def library_version(MPI):  # pylint: disable=invalid-name
    """MPI_Get_library_version without the padding some libraries leave."""
    return MPI.Get_library_version().strip().strip('\0').strip()


def start(device, assume_cuda_aware=False, capture=None):
    """MPI up, the device chosen and checked on every rank: (MPI, comm, xp, gpu, cuda_aware, host), or None after rank 0
    reported why not (mpi4py or CuPy missing, no GPU, MPI known not to be CUDA-aware): exit 2 then.
    """
    try:
        MPI = import_mpi(capture)  # pylint: disable=invalid-name
    except EnvironmentProblem as exc:
        if launcher_rank() == 0:
            print('%s: error: %s' % (PROG, exc), file=sys.stderr)
        return None
    comm = MPI.COMM_WORLD
    host = MPI.Get_processor_name()
    local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    problem, xp, gpu = None, None, None
    try:
        xp, gpu = array_module(device, local_rank)
    except EnvironmentProblem as exc:
        problem = exc
    if agree_on_problems(comm, host, problem):
        return None
    if gpu is not None:
        # Open MPI 5 answers 1 only once the CUDA runtime is up in this process: ask after touching the GPU
        xp.zeros(1, dtype=xp.float32)
        synchronize(xp)
    cuda_aware = libmpi_cuda_support()
    if device == 'cuda' and cuda_aware is False and not assume_cuda_aware:
        problem = ('MPI is not CUDA-aware (MPIX_Query_cuda_support() returned 0 in %s): use a CUDA-aware Open MPI '
                   '(HPC-X or a --with-cuda build with UCX cuda transports), --device cpu, or --assume-cuda-aware if the '
                   'query is known to under-report here' % library_version(MPI).splitlines()[0])
    if agree_on_problems(comm, host, problem):
        return None
    return MPI, comm, xp, gpu, cuda_aware, host


def set_up(args, capture):
    """Start MPI and build the engines: (ctx, engines, cuda_aware), or None after rank 0 said why not."""
    started = start(args.device, args.assume_cuda_aware, capture)
    if started is None:
        return None
    MPI, comm, xp, gpu, cuda_aware, host = started  # pylint: disable=invalid-name
    ctx = Context(MPI, comm, xp, gpu, host, args)
    engines = build_engines(ctx, args.engine, sweep_sizes(args.min_bytes, args.max_bytes)[-1] // ITEMSIZE)
    if engines is None:
        return None
    for engine in engines:
        if engine.name == 'mpi' and capture is not None:
            engine.read_selection(capture.text())
    return ctx, engines, cuda_aware


def main(argv=None):
    """Parse, set up, sweep, report; returns the exit status. Rank 0 of a job with the mpi engine reads Open MPI's coll
    selection from its standard error, unless the job asked for coll_base_verbose itself."""
    args = parse_args(argv)
    capture = None
    if 'mpi' in args.engine and launcher_rank() == 0 and COLL_VERBOSE_VARIABLE not in os.environ:
        capture = CollSelectionFilter()
    try:
        return run(args, capture)
    finally:
        if capture is not None:
            capture.stop()


def run(args, capture):
    """Set up, sweep, report: the exit status."""
    ready = set_up(args, capture)
    if ready is None:
        return 2
    ctx, engines, cuda_aware = ready
    MPI, comm = ctx.MPI, ctx.comm  # pylint: disable=invalid-name
    environment = job_environment(comm, ctx.host, comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank())
    results, errors, links = run_sweep(ctx, engines, args)
    for engine in engines:
        if hasattr(engine, 'close'):
            # collective: the ipc engine unmaps the peers' buffers and frees its windows
            engine.close()
    hosts = sorted(set(comm.allgather(ctx.host)))
    gpus = comm.gather(ctx.gpu, root=0)
    correct = comm.allreduce(0 if any(not r['correct'] for r in results) else 1, op=MPI.MIN) == 1
    if comm.Get_rank() != 0:
        return 0 if correct else 1
    world = comm.Get_size()
    described = dict((engine.name, engine.describe()) for engine in engines)
    if links is not None:
        described['ring']['links'] = links
    report = {
        'world_size': world,
        'device': args.device,
        'hosts': hosts,
        'mpi': {'library_version': library_version(MPI), 'cuda_aware': cuda_aware},
        'engines': described,
        'job_environment': environment,
        'results': results,
        'correct': correct,
        'errors': errors,
        'gpus': gpus if args.device == 'cuda' else None,
        'params': {'engines': args.engine, 'min_bytes': args.min_bytes, 'max_bytes': args.max_bytes, 'iters': args.iters,
                   'warmup': args.warmup, 'dtype': 'float32', 'op': 'sum', 'busbw_factor': bus_factor(world),
                   'ranks_per_node': args.ranks_per_node, 'ring_pipeline': args.ring_pipeline,
                   'ring_min_chunk': args.ring_min_chunk, 'probe_bytes': args.probe_bytes,
                   'assume_cuda_aware': args.assume_cuda_aware, 'inject_wrong_result': args.inject_wrong_result or []},
    }
    print_table(report)
    if args.json:
        write_json(args.json, report)
    return 0 if report['correct'] else 1


if __name__ == '__main__':
    sys.exit(main())
