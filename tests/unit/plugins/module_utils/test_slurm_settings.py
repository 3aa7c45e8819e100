# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's input rules (module_utils/role_settings/slurm.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import role_problems
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


# --- accounting ---------------------------------------------------------------------------------------------------

ACCOUNTING = dict(DEFAULTS, slurm_accounting=True, slurm_accounting_db_password='Lab-only-0123456789',
                  slurm_accounting_db_name='slurm_acct_db', slurm_accounting_db_user='slurm')


def test_accounting_with_a_usable_password_passes():
    assert problems(ACCOUNTING) == []
    # off, no password is needed
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=None)) == []


def test_accounting_without_a_password_is_refused_naming_the_variable_and_the_host():
    for password in (None, ''):
        settings = dict(ACCOUNTING, slurm_accounting_db_password=password)
        assert role_problems('slurm', settings, 'node01') == [
            'slurm_accounting_db_password on node01: required while slurm_accounting is true: the password slurmdbd '
            'logs in to its MariaDB database with (keep it in Ansible Vault)']


@pytest.mark.parametrize('password', ['short-pw-1', 'with blank 0123456', 'hash#0123456789', "quote'0123456789",
                                      'back\\slash0123456', 'line\nbreak0123456', 'dq"0123456789ab'])
def test_a_password_slurmdbd_conf_cannot_carry_is_refused_and_never_quoted(password):
    found = problems(dict(ACCOUNTING, slurm_accounting_db_password=password))
    assert [label for label, _message in found] == ['slurm_accounting_db_password']
    assert password not in found[0][1] and repr(password) not in found[0][1]
    # given while accounting is off, it is checked all the same
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=password)) == found


@pytest.mark.parametrize('change, expected', [
    ({'slurm_accounting': 'yes'}, [('slurm_accounting', "must be true or false, got 'yes'")]),
    ({'slurm_accounting_db_name': 'slurm-acct'},
     [('slurm_accounting_db_name', "'slurm-acct' is not a MariaDB name of letters, digits and _, at most 64 "
       'characters')]),
    ({'slurm_accounting_db_user': 'u' * 33},
     [('slurm_accounting_db_user', "'%s' is not a MariaDB name of letters, digits and _, at most 32 characters"
       % ('u' * 33))]),
])
def test_broken_accounting_settings_are_named(change, expected):
    assert problems(dict(ACCOUNTING, **change)) == expected


def test_the_accounting_lines_are_the_roles_while_accounting_is_on():
    extra = {'AccountingStorageType': 'accounting_storage/slurmdbd', 'AccountingStorageHost': 'dbd01'}
    # a site's own slurmdbd elsewhere, while the role's accounting is off
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=None,
                         slurm_conf_extra=extra)) == []
    assert problems(dict(ACCOUNTING, slurm_conf_extra=dict(extra, AccountingStorageTRES='gres/gpu'))) == [
        ('slurm_conf_extra', '%s is written by the role (from the cluster model and its variables); a second line '
         'would contradict it' % key) for key in ('AccountingStorageType', 'AccountingStorageHost')]
