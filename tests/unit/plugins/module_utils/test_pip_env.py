# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""pip_environment: where pip takes packages from, as the mpi and validate roles hand it to their pip tasks."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pip_env import pip_environment

PROXY = {'https_proxy': 'http://user:secret@proxy.example:3128'}


def test_a_wheelhouse_shuts_every_index_out():
    env = pip_environment(PROXY, wheelhouse='/opt/hpcfabric/bench/wheelhouse', index_url='https://mirror.example/simple')
    assert env == dict(PROXY, PIP_DISABLE_PIP_VERSION_CHECK='1', PIP_NO_INDEX='1',
                       PIP_FIND_LINKS='/opt/hpcfabric/bench/wheelhouse')


def test_a_mirror_is_the_index():
    env = pip_environment(None, index_url='https://mirror.example/simple')
    assert env == {'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_INDEX_URL': 'https://mirror.example/simple'}


def test_pypi_by_default_and_source_builds_named():
    # the mpi role's mpi4py built by the MPI's own mpicc (mpi_mpi4py_binary false)
    assert pip_environment({}, no_binary=['mpi4py']) == {'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_NO_BINARY': 'mpi4py'}


def test_wheels_only_named():
    # the mpi role's mpi4py as its binary wheel: pip must not fall back to compiling the sdist
    want = {'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_ONLY_BINARY': 'mpi4py,numpy'}
    assert pip_environment({}, only_binary=['mpi4py', 'numpy']) == want


def test_the_input_is_not_changed():
    base = dict(PROXY)
    pip_environment(base, wheelhouse='/w')
    assert base == PROXY


@pytest.mark.parametrize('kwargs, message', [
    ({'wheelhouse': 'wheels'}, 'absolute directory'),
    ({'no_binary': 'mpi4py'}, 'no_binary must be a list of project names'),
    ({'only_binary': ['mpi4py', '']}, 'only_binary must be a list of project names'),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pip_environment({}, **kwargs)


def test_values_that_are_not_strings_are_named_without_their_value():
    with pytest.raises(ValueError) as info:
        pip_environment({'PIP_TIMEOUT': 60, 'https_proxy': 'http://user:secret@p:1'})
    assert 'PIP_TIMEOUT is not' in str(info.value) and 'secret' not in str(info.value)
