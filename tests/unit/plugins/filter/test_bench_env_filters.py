# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The bench environment's filters as playbooks call them (the logic: test_bench_env.py, test_pip_env.py)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.bench_env import FilterModule as BenchEnv
from ansible_collections.hpcfabric.cluster.plugins.filter.pip_environment import FilterModule as PipEnvironment

BENCH = BenchEnv().filters()
pip_environment = PipEnvironment().filters()['pip_environment']


def test_the_bench_env_filters_are_there():
    assert set(BENCH) == {'bench_env_plan', 'bench_env_problems'}


def test_a_plan_with_no_mpi_names_it():
    found = BENCH['bench_env_plan']({'venv': '/opt/hpcfabric/bench/venv', 'device': 'cpu', 'mpi4py_python': None,
                                     'probe': None, 'tools_problems': ['no MPI install recorded']})
    assert found['problems'] == ['no MPI install recorded']


def test_bad_pip_input_is_reported_by_the_filters_name():
    with pytest.raises(AnsibleFilterError, match='^pip_environment: the wheelhouse must be an absolute directory'):
        pip_environment({}, wheelhouse='relative')


def test_the_mpi_roles_mpi4py_environment():
    assert pip_environment({}, wheelhouse='/opt/dl/wheelhouse', no_binary=['mpi4py']) == {
        'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_NO_INDEX': '1', 'PIP_FIND_LINKS': '/opt/dl/wheelhouse',
        'PIP_NO_BINARY': 'mpi4py'}
