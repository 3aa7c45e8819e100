# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""files/bench/rank_env.sh under /bin/sh: what a rank of an all-node job and the one rank of a per-rail job see."""
from __future__ import annotations
import os
import subprocess
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parents[2] / 'files' / 'bench' / 'rank_env.sh'
# as the validate role writes it for a node whose rails 0 and 1 run on GPU 0 and GPU 3; no NUMA node, so the command
# runs without numactl whether or not this machine has it. Rank 1 drives no single rail (two ports near its GPU).
MAP = """# comment
0 0 mlx5_0:1 - 0
1 1 mlx5_0:1,mlx5_1:1 - -
rail0 0 - - 0
rail1 3 - - 1
"""
# a map written before the rail column: its lines still bind
OLD_MAP = """0 GPU0 mlx5_0:1 -
rail1 3 - -
"""
KEYS = ('UCX_NET_DEVICES', 'CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER', 'HPCFABRIC_GPU', 'HPCFABRIC_RAIL')


def rank_env(tmp_path, args, local_rank=None, map_text=MAP):
    path = tmp_path / 'affinity'
    path.write_text(map_text)
    env = dict((k, v) for k, v in os.environ.items() if k not in KEYS + ('OMPI_COMM_WORLD_LOCAL_RANK',))
    env['UCX_NET_DEVICES'] = 'mlx5_0:1,mlx5_1:1'
    if local_rank is not None:
        env['OMPI_COMM_WORLD_LOCAL_RANK'] = str(local_rank)
    done = subprocess.run(['/bin/sh', str(WRAPPER), str(path)] + args + ['/usr/bin/env'], env=env,
                          capture_output=True, text=True, check=True)
    seen = dict(line.split('=', 1) for line in done.stdout.splitlines() if '=' in line)
    return dict((key, seen.get(key)) for key in KEYS)


@pytest.mark.parametrize('local_rank, gpu, nets, rail', [(0, '0', 'mlx5_0:1', '0'), (1, '1', 'mlx5_0:1,mlx5_1:1', None),
                                                         (None, '0', 'mlx5_0:1', '0')])
def test_a_rank_of_an_all_node_job_gets_its_gpu_ports_and_rail_and_sees_every_gpu(tmp_path, local_rank, gpu, nets, rail):
    expected = {'UCX_NET_DEVICES': nets, 'CUDA_VISIBLE_DEVICES': None, 'CUDA_DEVICE_ORDER': None, 'HPCFABRIC_GPU': gpu,
                'HPCFABRIC_RAIL': rail}
    assert rank_env(tmp_path, [], local_rank) == expected


@pytest.mark.parametrize('rail, gpu', [('0', '0'), ('1', '3')])
def test_the_rank_of_a_rail_job_sees_only_that_rails_gpu_and_keeps_the_jobs_ports(tmp_path, rail, gpu):
    # local rank 0, as the one rank per node of a rail job is: the rail's line wins over rank 0's
    expected = {'UCX_NET_DEVICES': 'mlx5_0:1,mlx5_1:1', 'CUDA_VISIBLE_DEVICES': gpu, 'CUDA_DEVICE_ORDER': 'PCI_BUS_ID',
                'HPCFABRIC_GPU': None, 'HPCFABRIC_RAIL': rail}
    assert rank_env(tmp_path, ['--rail', rail], 0) == expected


def test_a_map_without_the_rail_column_still_binds(tmp_path):
    assert rank_env(tmp_path, [], 0, map_text=OLD_MAP)['UCX_NET_DEVICES'] == 'mlx5_0:1'
    seen = rank_env(tmp_path, ['--rail', '1'], 0, map_text=OLD_MAP)
    assert (seen['CUDA_VISIBLE_DEVICES'], seen['HPCFABRIC_RAIL']) == ('3', None)


def test_without_a_map_or_a_line_nothing_is_bound(tmp_path):
    unbound = {'UCX_NET_DEVICES': 'mlx5_0:1,mlx5_1:1', 'CUDA_VISIBLE_DEVICES': None, 'CUDA_DEVICE_ORDER': None,
               'HPCFABRIC_GPU': None, 'HPCFABRIC_RAIL': None}
    assert rank_env(tmp_path, ['--rail', '2'], 0) == unbound
    assert rank_env(tmp_path, ['--rail', '0'], 0, map_text='') == unbound
    assert rank_env(tmp_path, [], 5) == unbound
