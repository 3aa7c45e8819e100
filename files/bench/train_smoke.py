# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Smoke training job: proves that data-parallel training runs, checkpoints and restarts on the cluster.

A two-layer MLP learns a noisy synthetic regression; every rank holds its own shard of the data, the gradients
are summed with MPI_Allreduce (on GPU buffers with --device cuda, as a framework's data-parallel step would),
and rank 0 writes a checkpoint every --checkpoint-every steps and at the end. --resume makes rank 0 load the
newest checkpoint and broadcast it, so a second mpirun continues where the first stopped:

    mpirun --hostfile HOSTFILE python3 train_smoke.py --steps 10 --checkpoint-dir /shared/ckpt --json first.json
    mpirun --hostfile HOSTFILE python3 train_smoke.py --steps 20 --checkpoint-dir /shared/ckpt --resume --json second.json

At the end every rank must hold identical parameters and the loss must have gone down.
Exit status: 0 ok, 1 the job failed (the JSON says why), 2 bad arguments or an unusable environment.
Needs allreduce.py from the same directory.
"""

from __future__ import annotations

import math
import os
import re
import sys
import zipfile

# installed side by side with this script, which Python puts first on sys.path
from allreduce import RankZeroParser, non_negative_int, positive_int, start, synchronize, write_json

PROG = os.path.basename(sys.argv[0]) or 'train_smoke.py'
# the model: inputs -> tanh hidden layer -> one output
N_IN, N_HIDDEN = 8, 32
SHAPES = (('w1', (N_IN, N_HIDDEN)), ('b1', (N_HIDDEN,)), ('w2', (N_HIDDEN, 1)), ('b2', (1,)))
N_PARAMS = N_IN * N_HIDDEN + N_HIDDEN + N_HIDDEN + 1
CHECKPOINT_RE = re.compile(r'^step-(\d{8})\.npz$')


class JobFailed(Exception):
    """The job cannot go on; every rank has been told and exits 1."""


def parse_args(argv=None):
    """Command line; argparse exits 2 on bad arguments."""
    parser = RankZeroParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--device', choices=['cuda', 'cpu'], default='cuda',
                        help='cuda: parameters, data and gradients on the GPU, gradients allreduced from GPU buffers; cpu: NumPy')
    parser.add_argument('--steps', type=positive_int, default=20, help='train until this step (a total, also after --resume; default 20)')
    parser.add_argument('--checkpoint-dir', required=True, help='where rank 0 writes step-NNNNNNNN.npz (created if missing)')
    parser.add_argument('--checkpoint-every', type=positive_int, default=5, help='checkpoint every N steps (default 5), and at the end')
    parser.add_argument('--resume', action='store_true', help='continue from the newest checkpoint in --checkpoint-dir (an error if none)')
    parser.add_argument('--json', metavar='PATH', help='write the summary here (rank 0)')
    parser.add_argument('--samples-per-rank', type=positive_int, default=256, help="each rank's shard of the data (default 256)")
    parser.add_argument('--lr', type=float, default=0.05, help='learning rate of the full-batch gradient descent (default 0.05)')
    parser.add_argument('--seed', type=non_negative_int, default=0, help='seed of the data and the initial weights (default 0)')
    parser.add_argument('--assume-cuda-aware', action='store_true',
                        help='with --device cuda, run even when MPIX_Query_cuda_support() says 0 (some UCX builds under-report)')
    args = parser.parse_args(argv)
    if not args.lr > 0:
        parser.error('--lr must be positive')
    return args


def views(params):
    """Named views into the flat parameter (or gradient) vector, so one Allreduce moves all of them."""
    out, offset = {}, 0
    for name, shape in SHAPES:
        size = shape[0] * (shape[1] if len(shape) > 1 else 1)
        out[name] = params[offset:offset + size].reshape(shape)
        offset += size
    return out


def initial_params(xp, seed):
    """Small random weights, the same for a given seed."""
    import numpy  # pylint: disable=import-outside-toplevel
    rng = numpy.random.default_rng([seed, 1])
    flat = numpy.zeros(N_PARAMS)
    for name, view in views(flat).items():
        if name.startswith('w'):
            view[...] = rng.normal(0.0, 1.0 / view.shape[0] ** 0.5, view.shape)
    return xp.asarray(flat)


def shard(xp, seed, rank, samples):
    """This rank's data: inputs and noisy targets of a fixed teacher function (the same teacher on every rank)."""
    import numpy  # pylint: disable=import-outside-toplevel
    teacher = numpy.random.default_rng([seed, 2]).normal(0.0, 1.0, N_IN) / N_IN ** 0.5
    rng = numpy.random.default_rng([seed, 3, rank])
    x = rng.normal(0.0, 1.0, (samples, N_IN))
    y = numpy.sin(2.0 * x @ teacher) + 0.1 * rng.normal(0.0, 1.0, samples)
    return xp.asarray(x), xp.asarray(y.reshape(samples, 1))


def local_step(xp, params, x, y, total_samples, out):
    """Write this rank's share of the gradient of the global mean squared error into out[:-1], its squared error
    sum into out[-1]; summed over ranks, out is the full gradient and the global error.
    """
    p = views(params)
    hidden = xp.tanh(x @ p['w1'] + p['b1'])
    residual = hidden @ p['w2'] + p['b2'] - y
    d_out = 2.0 * residual / total_samples
    d_hidden = (d_out @ p['w2'].T) * (1.0 - hidden ** 2)
    g = views(out[:-1])
    g['w2'][...] = hidden.T @ d_out
    g['b2'][...] = d_out.sum(axis=0)
    g['w1'][...] = x.T @ d_hidden
    g['b1'][...] = d_hidden.sum(axis=0)
    out[-1] = (residual ** 2).sum()


def checkpoints(directory):
    """{step: path} of the checkpoints in directory (none when it does not exist)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return {}
    return {int(m.group(1)): os.path.join(directory, n) for n, m in ((n, CHECKPOINT_RE.match(n)) for n in names) if m}


def save_checkpoint(directory, step, params, loss, world_size):
    """Write step-NNNNNNNN.npz atomically (temporary file, fsync, rename, fsync of the directory); returns its path."""
    import numpy  # pylint: disable=import-outside-toplevel
    # CuPy arrays come to the host with get()
    params = params.get() if hasattr(params, 'get') else params
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, 'step-%08d.npz' % step)
    tmp = os.path.join(directory, '.step-%08d.npz.tmp.%d' % (step, os.getpid()))
    try:
        with open(tmp, 'wb') as handle:
            numpy.savez(handle, step=numpy.int64(step), params=params, loss=numpy.float64(loss),
                        world_size=numpy.int64(world_size), n_in=numpy.int64(N_IN), n_hidden=numpy.int64(N_HIDDEN))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def load_checkpoint(directory):
    """(step, params as NumPy, path) of the newest checkpoint; JobFailed naming the directory or file when impossible."""
    import numpy  # pylint: disable=import-outside-toplevel
    found = checkpoints(directory)
    if not found:
        raise JobFailed('--resume: no checkpoint (step-NNNNNNNN.npz) in %s' % os.path.abspath(directory))
    step = max(found)
    path = found[step]
    try:
        with numpy.load(path) as data:
            saved = int(data['step']), data['params'].astype(numpy.float64), (int(data['n_in']), int(data['n_hidden']))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise JobFailed('--resume: cannot read checkpoint %s: %s' % (path, exc)) from None
    if saved[0] != step or saved[1].shape != (N_PARAMS,) or saved[2] != (N_IN, N_HIDDEN):
        raise JobFailed('--resume: %s does not hold step %d of this model (%d parameters)' % (path, step, N_PARAMS))
    return step, saved[1], path


def on_rank0(comm, action, *args):
    """Run action(*args) on rank 0 and share its result with every rank; a failure there fails the job everywhere."""
    result, error = None, None
    if comm.Get_rank() == 0:
        try:
            result = action(*args)
        except (JobFailed, OSError) as exc:
            error = str(exc)
    result, error = comm.bcast((result, error), root=0)
    if error:
        raise JobFailed(error)
    return result


def train(MPI, comm, xp, args, summary):  # pylint: disable=invalid-name,too-many-locals
    """The data-parallel loop; fills summary in place and raises JobFailed when the job cannot go on."""
    world = comm.Get_size()
    total_samples = args.samples_per_rank * world
    params = initial_params(xp, args.seed)
    start_step = 0
    if args.resume:
        step, saved, path = on_rank0(comm, load_checkpoint, args.checkpoint_dir)
        start_step = step
        summary.update(resumed=True, resumed_from=path)
        if comm.Get_rank() == 0:
            params = xp.asarray(saved)
    # as a framework does at start-up: every rank takes rank 0's weights, from a device buffer with --device cuda
    synchronize(xp)
    comm.Bcast([params, MPI.DOUBLE], root=0)
    summary['start_step'] = start_step
    if start_step >= args.steps:
        raise JobFailed('the newest checkpoint is at step %d, which already reaches --steps %d: nothing to train'
                        % (start_step, args.steps))
    x, y = shard(xp, args.seed, comm.Get_rank(), args.samples_per_rank)
    local, total = xp.zeros(N_PARAMS + 1), xp.zeros(N_PARAMS + 1)
    step = start_step
    while step < args.steps:
        local_step(xp, params, x, y, total_samples, local)
        synchronize(xp)
        comm.Allreduce([local, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
        if summary['initial_loss'] is None:
            summary['initial_loss'] = float(total[-1]) / total_samples
        params -= args.lr * total[:-1]
        step += 1
        if step % args.checkpoint_every == 0 or step == args.steps:
            # the loss saved is the one measured at the start of this step
            loss = float(total[-1]) / total_samples
            path = on_rank0(comm, save_checkpoint, args.checkpoint_dir, step, params, loss, world)
            summary['checkpoints_written'].append(path)
            summary['checkpoint'] = path
        summary['end_step'] = step
    # the loss of the final weights
    local_step(xp, params, x, y, total_samples, local)
    synchronize(xp)
    comm.Allreduce([local, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
    summary['final_loss'] = float(total[-1]) / total_samples
    # identical replicas: the element-wise minimum and maximum over ranks must both equal this rank's parameters
    low, high = xp.empty_like(params), xp.empty_like(params)
    synchronize(xp)
    comm.Allreduce([params, MPI.DOUBLE], [low, MPI.DOUBLE], op=MPI.MIN)
    comm.Allreduce([params, MPI.DOUBLE], [high, MPI.DOUBLE], op=MPI.MAX)
    same = bool(xp.array_equal(low, params)) and bool(xp.array_equal(high, params))
    summary['params_consistent'] = comm.allreduce(1 if same else 0, op=MPI.MIN) == 1


def verdict(summary):
    """ok and the reasons it is not."""
    problems = []
    if not summary['params_consistent']:
        problems.append('the ranks ended with different parameters (the gradient allreduce is not giving every rank the same sum)')
    initial, final = summary['initial_loss'], summary['final_loss']
    if initial is None or final is None or not (math.isfinite(initial) and math.isfinite(final) and final < initial):
        problems.append('the loss did not go down (%r at step %s, %r at step %s)'
                        % (initial, summary['start_step'], final, summary['end_step']))
    if summary['checkpoint'] is None:
        problems.append('no checkpoint was written')
    return not problems, problems


def main(argv=None):
    """Parse, set up, train, check, report; returns the exit status."""
    args = parse_args(argv)
    started = start(args.device, args.assume_cuda_aware)
    if started is None:
        return 2
    MPI, comm, xp, _gpu, cuda_aware, host = started  # pylint: disable=invalid-name
    hosts = sorted(set(comm.allgather(host)))
    summary = {
        # rank 0 reads and writes the checkpoints: where it ran says which node used the checkpoint directory
        'world_size': comm.Get_size(), 'device': args.device, 'hosts': hosts, 'rank0_host': comm.bcast(host, root=0),
        'start_step': None, 'end_step': None,
        'resumed': False, 'resumed_from': None, 'initial_loss': None, 'final_loss': None, 'checkpoint': None,
        'checkpoints_written': [], 'checkpoint_dir': os.path.abspath(args.checkpoint_dir), 'params_consistent': False,
        'loss_decreased': False, 'ok': False, 'errors': [], 'cuda_aware': cuda_aware,
        'params': {'steps': args.steps, 'checkpoint_every': args.checkpoint_every, 'samples_per_rank': args.samples_per_rank,
                   'lr': args.lr, 'seed': args.seed, 'model': 'mlp %d-%d-1 tanh' % (N_IN, N_HIDDEN), 'n_params': N_PARAMS},
    }
    try:
        train(MPI, comm, xp, args, summary)
        summary['ok'], summary['errors'] = verdict(summary)
    except JobFailed as exc:
        summary['errors'] = [str(exc)]
    initial, final = summary['initial_loss'], summary['final_loss']
    summary['loss_decreased'] = initial is not None and final is not None and final < initial
    if comm.Get_rank() != 0:
        return 0 if summary['ok'] else 1
    if final is not None:
        # the loop ran to the end, so every step and loss is known
        print('%s: %d ranks on %s, %s steps %d -> %d, loss %.6f -> %.6f, checkpoint %s, parameters %s'
              % (PROG, summary['world_size'], ','.join(hosts), 'resumed' if summary['resumed'] else 'trained',
                 int(summary['start_step']), int(summary['end_step']), float(initial), float(final), summary['checkpoint'],
                 'identical on every rank' if summary['params_consistent'] else 'DIFFER between ranks'))
    for error in summary['errors']:
        print('%s: error: %s' % (PROG, error), file=sys.stderr)
    if args.json:
        write_json(args.json, summary)
    return 0 if summary['ok'] else 1


if __name__ == '__main__':
    sys.exit(main())
