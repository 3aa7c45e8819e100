# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.settings: the validate role's variables checked and turned into what its tasks hand on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import role_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.settings import validate_settings

ROOT = Path(__file__).resolve().parents[5]
# the role's defaults as the vars lookup hands them over (the templated ones are never read here)
DEFAULTS = yaml.safe_load((ROOT / 'roles' / 'validate' / 'defaults' / 'main.yml').read_text())


def variables(**changes):
    return dict(DEFAULTS, **changes)


def test_the_defaults():
    settings = validate_settings(DEFAULTS, True)
    assert settings == {
        'problems': [],
        'engines': ['ring', 'mpi'],
        'nccl': False,
        'bench_argv': ['--device', 'cuda', '--min-bytes', '1048576', '--max-bytes', '1073741824', '--iters', '20',
                       '--warmup', '5'],
        'mpirun_args': ['--bind-to', 'none'],
        'perftest_wanted': True,
        'drift_packages': ['rdma-core', 'ibverbs-providers', 'libibverbs1', 'libibverbs', 'doca-ofed',
                           'mlnx-ofed-kernel-utils'],
        'isolation': {'repeats': 0, 'seed': 20240601},
        'launch': {'tool': 'auto', 'device': 'cuda', 'work_dir': '/var/tmp/hpcfabric-validate', 'perftest_bytes': 8388608,
                   'perftest_seconds': 5, 'perftest_port': 18515, 'perftest_args': [],
                   'bench': ['/opt/hpcfabric/bench/allreduce.py', '--device', 'cuda', '--min-bytes', '1048576',
                             '--max-bytes', '1073741824', '--iters', '20', '--warmup', '5', '--engine', 'ring',
                             '--probe-bytes', '0']},
    }


def test_a_host_outside_the_group_is_its_one_problem():
    assert validate_settings(variables(), False)['problems'] == ['validate_group: this host is not in group gpu_nodes']
    assert validate_settings(variables(), True)['problems'] == []


def test_the_nccl_engine_needs_nccl_on_gpus_and_is_refused_on_host_buffers():
    settings = validate_settings(variables(validate_engine='nccl', validate_engines_reported=['ring', 'nccl']), True)
    assert (settings['engines'], settings['nccl'], settings['launch']['bench'][-3]) == (['nccl', 'ring'], True, 'nccl')
    on_cpu = validate_settings(variables(validate_engines_reported=['nccl'], validate_device='cpu'), True)
    assert on_cpu['nccl'] is False and on_cpu['mpirun_args'] == []
    # the role's own rules refuse it (the defaults' directories here are unresolved templates: left out)
    problems = role_problems('validate', variables(validate_engines_reported=['nccl'], validate_device='cpu'), 'n1')
    assert [p for p in problems if '{{' not in p] == [
        'validate on n1: validate_engines_reported names nccl, which reduces GPU buffers only: set validate_device=cuda '
        'or leave nccl out']


def test_the_strings_of_extra_vars():
    settings = validate_settings(variables(validate_rdma='false', validate_inject_wrong_result='yes',
                                           validate_isolation_repeats='2', validate_min_bytes='65536',
                                           validate_mpirun_extra_args=['--mca', 'coll_ucc_enable', '1']), True)
    assert settings['problems'] == []
    assert settings['perftest_wanted'] is False
    assert settings['bench_argv'][2:4] == ['--min-bytes', '65536'] and settings['bench_argv'][-1] == '--inject-wrong-result'
    assert settings['isolation']['repeats'] == 2
    assert settings['mpirun_args'] == ['--bind-to', 'none', '--mca', 'coll_ucc_enable', '1']


@pytest.mark.parametrize('changes, wanted', [
    ({'validate_isolation': 'never'}, False),
    ({'validate_isolation_tool': 'mpi'}, False),
    ({'validate_isolation_tool': 'perftest'}, True),
])
def test_ib_write_bw_is_wanted_only_where_the_isolation_may_run_it(changes, wanted):
    assert validate_settings(variables(**changes), True)['perftest_wanted'] is wanted


def test_the_golden_manifest_adds_the_packages_it_names_once():
    settings = validate_settings(variables(validate_drift_packages=['rdma-core', 'rdma-core'],
                                           validate_golden={'package:tzdata': '2025b-0+deb12u1', 'cuda': '12.4',
                                                            'package:rdma-core': '44.0-2'}), True)
    assert settings['drift_packages'] == ['rdma-core', 'tzdata']


@pytest.mark.parametrize('given, message', [
    ([], '^variables must map the validate role'),
    (variables(validate_isolation_repeats='some'), '^validate_isolation_repeats must be a number'),
])
def test_reject(given, message):
    with pytest.raises(ValueError, match=message):
        validate_settings(given, True)
