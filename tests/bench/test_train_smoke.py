# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""files/bench/train_smoke.py under a real mpirun: train, checkpoint, restart from the checkpoint, failures."""
from __future__ import annotations
import socket

import numpy as np
import pytest

CPU = ['--device', 'cpu']


def test_train_then_resume_continues_from_the_checkpoint(mpirun, read_json, tmp_path):
    ckpt = tmp_path / 'ckpt'
    proc = mpirun('train_smoke.py', *CPU, '--steps', 6, '--checkpoint-every', 3, '--checkpoint-dir', ckpt,
                  '--json', tmp_path / 'first.json', np=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = read_json(tmp_path / 'first.json')
    assert first['ok'] is True and first['errors'] == []
    assert (first['world_size'], first['device'], first['hosts']) == (2, 'cpu', [socket.gethostname()])
    assert (first['start_step'], first['end_step'], first['resumed']) == (0, 6, False)
    assert first['params_consistent'] is True
    assert first['final_loss'] < first['initial_loss']
    assert first['checkpoint'] == str(ckpt / 'step-00000006.npz')
    assert sorted(p.name for p in ckpt.iterdir()) == ['step-00000003.npz', 'step-00000006.npz']
    with np.load(first['checkpoint']) as saved:
        assert int(saved['step']) == 6
        assert saved['params'].shape == (first['params']['n_params'],)
        assert np.all(np.isfinite(saved['params']))

    proc = mpirun('train_smoke.py', *CPU, '--steps', 10, '--checkpoint-every', 3, '--checkpoint-dir', ckpt, '--resume',
                  '--json', tmp_path / 'second.json', np=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    second = read_json(tmp_path / 'second.json')
    assert second['ok'] is True
    assert (second['start_step'], second['end_step'], second['resumed']) == (first['end_step'], 10, True)
    assert second['resumed_from'] == first['checkpoint']
    # same ranks, same data: the restarted job starts from exactly the weights the first one ended with
    assert second['initial_loss'] == pytest.approx(first['final_loss'], rel=1e-12)
    assert second['final_loss'] < second['initial_loss']
    assert second['checkpoints_written'] == [str(ckpt / 'step-00000009.npz'), str(ckpt / 'step-00000010.npz')]
    # written atomically: no temporary files left behind
    assert sorted(p.name for p in ckpt.iterdir()) == ['step-%08d.npz' % s for s in (3, 6, 9, 10)]
    assert 'resumed steps 6 -> 10' in proc.stdout


def test_resume_without_a_checkpoint_fails_naming_the_directory(mpirun, read_json, tmp_path):
    ckpt = tmp_path / 'empty'
    proc = mpirun('train_smoke.py', *CPU, '--steps', 4, '--checkpoint-dir', ckpt, '--resume', '--json', tmp_path / 's.json', np=2)
    assert proc.returncode == 1
    assert 'train_smoke.py: error: --resume: no checkpoint (step-NNNNNNNN.npz) in %s' % ckpt in proc.stderr
    summary = read_json(tmp_path / 's.json')
    assert summary['ok'] is False and summary['resumed'] is False
    assert summary['errors'] == ['--resume: no checkpoint (step-NNNNNNNN.npz) in %s' % ckpt]


def test_a_checkpoint_that_cannot_be_read_is_named(mpirun, tmp_path):
    ckpt = tmp_path / 'ckpt'
    ckpt.mkdir()
    (ckpt / 'step-00000004.npz').write_bytes(b'not a zip file')
    proc = mpirun('train_smoke.py', *CPU, '--steps', 8, '--checkpoint-dir', ckpt, '--resume', np=2)
    assert proc.returncode == 1
    assert '--resume: cannot read checkpoint %s' % (ckpt / 'step-00000004.npz') in proc.stderr


@pytest.mark.usefixtures('without_cupy')
def test_cuda_without_cupy_refuses(mpirun, tmp_path):
    proc = mpirun('train_smoke.py', '--device', 'cuda', '--steps', 2, '--checkpoint-dir', tmp_path, np=2)
    assert proc.returncode == 2
    assert 'train_smoke.py: error: --device cuda needs CuPy' in proc.stderr


@pytest.mark.parametrize('args, message', [
    (['--steps', '0', '--checkpoint-dir', 'x'], "'0': must be at least 1"),
    (['--steps', '4'], 'the following arguments are required: --checkpoint-dir'),
    (['--checkpoint-dir', 'x', '--checkpoint-every', '0'], "'0': must be at least 1"),
    (['--checkpoint-dir', 'x', '--lr', '0'], '--lr must be positive'),
])
def test_bad_arguments_are_refused(plain, args, message):
    proc = plain('train_smoke.py', *args)
    assert proc.returncode == 2
    assert message in proc.stderr
