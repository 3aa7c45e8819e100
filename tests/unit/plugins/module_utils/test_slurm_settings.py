# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's input rules (module_utils/role_settings/slurm.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings.slurm import problems

DEFAULTS = {'slurm_controller_group': 'slurm_controllers', 'slurm_compute_group': 'gpu_nodes',
            'slurm_cluster_name': 'cluster', 'slurm_version': None, 'slurm_partitions': [{'name': 'gpu', 'default': True}],
            'slurm_topology_leaves': [], 'slurm_topology_spine': 'spine', 'slurm_gres_autodetect': False,
            'slurm_conf_extra': {}, 'slurm_memory_reserved_mb': 1024, 'slurm_munge_key_dir': None}


def test_the_defaults_pass():
    assert problems(DEFAULTS) == []
    assert problems({}) == []


@pytest.mark.parametrize('change, expected', [
    ({'slurm_compute_group': 'gpu nodes'}, [('slurm_compute_group', "'gpu nodes' is not an inventory group name")]),
    ({'slurm_cluster_name': 'B300'}, [('slurm_cluster_name', "'B300' is not a cluster name (lower-case letters, digits, "
                                       '_ and -, at most 40, starting with a letter)')]),
    ({'slurm_version': '22'}, [('slurm_version', "'22' is not a Slurm version (major.minor, e.g. 22.05)")]),
    ({'slurm_version': '23.11', 'slurm_gres_autodetect': True},
     [('slurm_gres_autodetect', 'AutoDetect=nvidia needs Slurm 24.11 or later, slurm_version is 23.11')]),
    ({'slurm_partitions': [{'name': 'gpu'}, {'name': 'gpu', 'nodes': 'node[1-'}]},
     [('slurm_partitions[1]', 'partition gpu is named twice'),
      ('slurm_partitions[1].nodes', "'node[1-': \"[\" without \"]\"")]),
    ({'slurm_partitions': [{'name': 'gpu', 'max_time': '2 days', 'options': {'Nodes': 'x', 'OverSubscribe': 'NO x'}}]},
     [('slurm_partitions[0].max_time', "'2 days' is not a Slurm time (INFINITE, minutes, h:m:s or d-h:m:s)"),
      ('slurm_partitions[0].options', "'Nodes' is not a partition setting the role leaves to you"),
      ('slurm_partitions[0].options.OverSubscribe', "'NO x' is not one slurm.conf word (no blank, line break or #)")]),
    ({'slurm_topology_leaves': [{'name': 'leaf 1', 'nodes': 'node[2-1]'}]},
     [('slurm_topology_leaves[0].name', "'leaf 1' is not a host name label (letters, digits and inner hyphens, 1-63 "
       'characters)'), ('slurm_topology_leaves[0].nodes', "'node[2-1]': the range 2-1 runs backwards")]),
    ({'slurm_conf_extra': {'mpidefault': 'none', 'SlurmctldDebug': 'info\nSlurmUser=root'}},
     [('slurm_conf_extra', 'MpiDefault is written by the role (from the cluster model and its variables); a second '
       'line would contradict it'),
      ('slurm_conf_extra.SlurmctldDebug', "'info\\nSlurmUser=root' is not one slurm.conf word (no blank, line break "
       'or #)')]),
    ({'slurm_memory_reserved_mb': -1}, [('slurm_memory_reserved_mb', 'must be a whole number of MB, 0 or more, got -1')]),
    ({'slurm_munge_key_dir': '/tmp/munge'},
     [('slurm_munge_key_dir', "'/tmp/munge' is under a directory every user can write to, which no secret belongs in")]),
])
def test_a_broken_setting_is_named(change, expected):
    assert problems(dict(DEFAULTS, **change)) == expected
