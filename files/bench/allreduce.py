# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""MPI_Allreduce (sum, float32) bandwidth sweep with a correctness check, for mpirun.

Run one rank per GPU (or per core with --device cpu):

    mpirun --hostfile HOSTFILE python3 allreduce.py --device cuda --min-bytes 1M --max-bytes 1G --json out.json

Numbers follow nccl-tests: the time of a size is the slowest rank's mean time per call,
algbw = bytes / time and busbw = algbw * 2(n-1)/n (0 for a single rank, as in nccl-tests).
Exit status: 0 every result correct, 1 a result was wrong (the JSON is still written), 2 bad arguments or an
unusable environment (no mpi4py, no CuPy, no GPU, MPI known not to be CUDA-aware).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import sys

# the values each rank contributes repeat with this period along the buffer, so the expected sum is a short pattern
PERIOD = 8
ITEMSIZE = 4  # float32
SIZE_SUFFIXES = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}
# launchers put the rank in the environment; used only to keep argparse from printing once per rank
RANK_VARIABLES = ('OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'PMI_RANK', 'SLURM_PROCID')
# a wrong sum is wrong on every rank: name a few, count the rest, so the JSON stays small at thousands of ranks
MAX_ERRORS_PER_SIZE = 4
PROG = os.path.basename(sys.argv[0]) or 'allreduce.py'


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


def parse_args(argv=None):
    """Command line; argparse exits 2 on bad arguments."""
    parser = RankZeroParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--device', choices=['cuda', 'cpu'], default='cuda',
                        help='cuda: CuPy device buffers handed straight to MPI (needs CUDA-aware MPI); cpu: NumPy host buffers')
    parser.add_argument('--min-bytes', type=parse_size, default=parse_size('1M'), help='smallest message (default 1M)')
    parser.add_argument('--max-bytes', type=parse_size, default=parse_size('64M'),
                        help='largest message (default 64M); sizes double from --min-bytes while they stay <= this')
    parser.add_argument('--iters', type=positive_int, default=20, help='timed calls per size (default 20)')
    parser.add_argument('--warmup', type=non_negative_int, default=5, help='untimed calls per size before timing (default 5)')
    parser.add_argument('--json', metavar='PATH', help='write the results here (rank 0)')
    parser.add_argument('--assume-cuda-aware', action='store_true',
                        help='with --device cuda, run even when MPIX_Query_cuda_support() says 0 (some UCX builds under-report); '
                             'the correctness check still guards every result')
    parser.add_argument('--inject-wrong-result', action='store_true',
                        help='for testing the validation only: the last rank corrupts its input so the largest size is wrong')
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


def import_mpi():
    """mpi4py's MPI module (initialises MPI), or an EnvironmentProblem naming the interpreter."""
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
    """NumPy, or CuPy with this rank's GPU selected (local rank modulo the visible GPUs); EnvironmentProblem if not."""
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
    gpu = local_rank % count
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


def run_sweep(MPI, comm, xp, args, host):  # pylint: disable=invalid-name
    """Time and check every size; returns (results, errors) on rank 0 (identical verdicts on every rank)."""
    rank, world = comm.Get_rank(), comm.Get_size()
    sizes = sweep_sizes(args.min_bytes, args.max_bytes)
    max_count = sizes[-1] // ITEMSIZE
    reps = -(-max_count // PERIOD)
    send = xp.tile(xp.asarray(rank_pattern(rank), dtype=xp.float32), reps)[:max_count]
    expected = xp.tile(xp.asarray(expected_pattern(world), dtype=xp.float32), reps)[:max_count]
    recv = xp.empty_like(send)
    if args.inject_wrong_result and rank == world - 1:
        # after the expected values exist, so the check below fails for real; only the largest size reads this element
        send[max_count - 1] += 1
    synchronize(xp)
    factor = bus_factor(world)
    results, errors = [], []
    for size in sizes:
        count = size // ITEMSIZE
        sendbuf, recvbuf = [send[:count], MPI.FLOAT], [recv[:count], MPI.FLOAT]
        # a call that writes nothing must not pass on the previous size's correct values
        recv[:count] = -1
        synchronize(xp)
        comm.Barrier()
        for _call in range(args.warmup):
            comm.Allreduce(sendbuf, recvbuf, op=MPI.SUM)
        synchronize(xp)
        comm.Barrier()
        start = MPI.Wtime()
        for _call in range(args.iters):
            comm.Allreduce(sendbuf, recvbuf, op=MPI.SUM)
        synchronize(xp)
        # never below the clock's resolution, so a size too small to time cannot divide by zero
        elapsed = max(comm.allreduce((MPI.Wtime() - start) / args.iters, op=MPI.MAX), MPI.Wtick())
        nwrong, index, got, want = check_result(recv, expected, count)
        message = None
        if nwrong:
            message = ('size %d: rank %d on %s got %s at index %d, expected %s (%d of %d elements wrong)'
                       % (size, rank, host, got, index, want, nwrong, count))
        messages = comm.gather(message, root=0)
        correct = comm.allreduce(0 if nwrong else 1, op=MPI.MIN) == 1
        algbw = size / elapsed / 1e9
        results.append({'size_bytes': size, 'count': count, 'time_us': elapsed * 1e6, 'algbw_gbs': algbw,
                        'busbw_gbs': algbw * factor, 'correct': correct})
        if rank == 0:
            wrong = [m for m in messages if m]
            errors.extend(wrong[:MAX_ERRORS_PER_SIZE])
            if len(wrong) > MAX_ERRORS_PER_SIZE:
                errors.append('size %d: %d more ranks got wrong results' % (size, len(wrong) - MAX_ERRORS_PER_SIZE))
    return results, errors


def print_table(report):
    """The human-readable sweep, nccl-tests style."""
    mpi = report['mpi']
    print('# allreduce sum float32  ranks %d  device %s  hosts %s' % (report['world_size'], report['device'], ','.join(report['hosts'])))
    library = mpi['library_version'].splitlines()[0] if mpi['library_version'] else '?'
    print('# %s  cuda_aware %s' % (library, {True: 'yes', False: 'no', None: 'unknown'}[mpi['cuda_aware']]))
    print('# %12s %12s %12s %12s %12s  %s' % ('size(B)', 'count', 'time(us)', 'algbw(GB/s)', 'busbw(GB/s)', 'check'))
    for row in report['results']:
        print('  %12d %12d %12.2f %12.3f %12.3f  %s' % (
            row['size_bytes'], row['count'], row['time_us'], row['algbw_gbs'], row['busbw_gbs'], 'ok' if row['correct'] else 'WRONG'))
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


def start(device, assume_cuda_aware=False):
    """MPI up, the device chosen and checked on every rank: (MPI, comm, xp, gpu, cuda_aware, host), or None after rank 0
    reported why not (mpi4py or CuPy missing, no GPU, MPI known not to be CUDA-aware): exit 2 then.
    """
    try:
        MPI = import_mpi()  # pylint: disable=invalid-name
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


def library_version(MPI):  # pylint: disable=invalid-name
    """MPI_Get_library_version without the padding some libraries leave."""
    return MPI.Get_library_version().strip().strip('\0').strip()


def main(argv=None):
    """Parse, set up, sweep, report; returns the exit status."""
    args = parse_args(argv)
    started = start(args.device, args.assume_cuda_aware)
    if started is None:
        return 2
    MPI, comm, xp, gpu, cuda_aware, host = started  # pylint: disable=invalid-name
    results, errors = run_sweep(MPI, comm, xp, args, host)
    hosts = sorted(set(comm.allgather(host)))
    gpus = comm.gather(gpu, root=0)
    if comm.Get_rank() != 0:
        return 0 if all(r['correct'] for r in results) else 1
    world = comm.Get_size()
    report = {
        'world_size': world,
        'device': args.device,
        'hosts': hosts,
        'mpi': {'library_version': library_version(MPI), 'cuda_aware': cuda_aware},
        'results': results,
        'correct': all(r['correct'] for r in results),
        'errors': errors,
        'gpus': gpus if args.device == 'cuda' else None,
        'params': {'min_bytes': args.min_bytes, 'max_bytes': args.max_bytes, 'iters': args.iters, 'warmup': args.warmup,
                   'dtype': 'float32', 'op': 'sum', 'busbw_factor': bus_factor(world),
                   'assume_cuda_aware': args.assume_cuda_aware, 'inject_wrong_result': args.inject_wrong_result},
    }
    print_table(report)
    if args.json:
        write_json(args.json, report)
    return 0 if report['correct'] else 1


if __name__ == '__main__':
    sys.exit(main())
