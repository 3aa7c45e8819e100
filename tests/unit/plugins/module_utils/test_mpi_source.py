# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The source flavour's configure flags and its build-once plan (module_utils/mpi_source.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_source import build_plan, configure_flags, runtime_environment

PREFIX = '/opt/hpcfabric/openmpi-x'


def test_without_cuda_both_builds_say_so():
    flags = configure_flags(PREFIX, '4.1.4', ucx_extra=['--enable-mt'], ompi_extra=['--enable-mpirun-prefix-by-default'])
    assert flags == {'ucx': ['--prefix=' + PREFIX, '--without-cuda', 'CFLAGS=-Wno-error', 'CXXFLAGS=-Wno-error',
                             '--enable-mt'],
                     'ompi': ['--prefix=' + PREFIX, '--with-ucx=' + PREFIX, '--without-cuda',
                              '--enable-mpirun-prefix-by-default']}


def test_cuda_with_nvidia_layout_links_the_stub():
    flags = configure_flags(PREFIX, '4.1.4', cuda=True, cuda_home='/usr/local/cuda-12.4/')
    assert flags['ucx'][1:2] == ['--with-cuda=/usr/local/cuda-12.4/']
    assert flags['ompi'][2:] == ['--with-cuda=/usr/local/cuda-12.4/', '--with-cuda-libdir=/usr/local/cuda-12.4/lib64/stubs']


def test_cuda_with_debian_layout_takes_the_libdir_given():
    flags = configure_flags(PREFIX, '4.1.4', cuda=True, cuda_home='/usr', cuda_libdir='/usr/lib/x86_64-linux-gnu')
    assert flags['ompi'][2:] == ['--with-cuda=/usr', '--with-cuda-libdir=/usr/lib/x86_64-linux-gnu']


def test_open_mpi_5_builds_its_bundled_pmix_prrte_hwloc_libevent():
    flags = configure_flags(PREFIX, '5.0.7', ompi_extra=['--enable-mpirun-prefix-by-default'])
    assert flags['ompi'] == ['--prefix=' + PREFIX, '--with-ucx=' + PREFIX, '--without-cuda', '--with-pmix=internal',
                             '--with-prrte=internal', '--with-hwloc=internal', '--with-libevent=internal',
                             '--enable-mpirun-prefix-by-default']
    assert flags['ucx'] == ['--prefix=' + PREFIX, '--without-cuda', 'CFLAGS=-Wno-error', 'CXXFLAGS=-Wno-error']


def test_a_site_that_names_its_own_pmix_keeps_it_and_the_rest_stays_bundled():
    flags = configure_flags(PREFIX, '5.0.7', ompi_extra=['--with-pmix=/opt/pmix-5.0.3', '--without-hwloc'])
    assert flags['ompi'][3:] == ['--with-prrte=internal', '--with-libevent=internal',
                                 '--with-pmix=/opt/pmix-5.0.3', '--without-hwloc']


def test_a_site_that_sets_its_own_cflags_keeps_them_and_loses_only_that_no_werror():
    flags = configure_flags(PREFIX, '5.0.7', ucx_extra=['CFLAGS=-O2 -march=native'])
    assert flags['ucx'] == ['--prefix=' + PREFIX, '--without-cuda', 'CXXFLAGS=-Wno-error', 'CFLAGS=-O2 -march=native']


def test_open_mpi_4_gets_no_bundled_flags():
    assert not [flag for flag in configure_flags(PREFIX, '4.1.6')['ompi'] if flag.endswith('=internal')]


@pytest.mark.parametrize('version', [None, '', 'v5.0.7', '5'])
def test_an_unreadable_version_is_refused(version):
    with pytest.raises(ValueError, match='major.minor'):
        configure_flags(PREFIX, version)


def _states(**hosts):
    return {host: {'stamp': stamp, 'needed': needed} for host, (stamp, needed) in hosts.items()}


@pytest.mark.parametrize('extra', [[], ['--enable-mpirun-prefix-by-default'], ['--with-pmix=internal'],
                                   ['--with-pmix=/opt/pmix', '--with-pmix=internal']])
def test_a_build_with_the_bundled_pmix_authenticates_to_slurm_the_native_way(extra):
    assert runtime_environment(PREFIX, extra) == {'MPI_HOME': PREFIX, 'OPAL_PREFIX': PREFIX, 'PMIX_MCA_psec': 'native'}


@pytest.mark.parametrize('extra', [['--with-pmix=/opt/pmix'], ['--with-pmix=external'], ['--without-pmix'],
                                   ['--with-pmix=internal', '--with-pmix=/usr/lib/x86_64-linux-gnu/pmix2']])
def test_a_build_against_the_site_pmix_keeps_that_pmix_security_choice(extra):
    assert runtime_environment(PREFIX, extra) == {'MPI_HOME': PREFIX, 'OPAL_PREFIX': PREFIX}


def test_on_new_hosts_the_first_builds_packs_and_the_others_install_its_package():
    plan = build_plan(_states(node01=('a', True), node02=('a', True), node03=('a', True)))
    assert plan == {'node01': {'builder': 'node01', 'build': True, 'install': False, 'pack': True},
                    'node02': {'builder': 'node01', 'build': False, 'install': True, 'pack': False},
                    'node03': {'builder': 'node01', 'build': False, 'install': True, 'pack': False}}


def test_hosts_added_later_get_the_package_of_a_host_that_has_the_build_and_nothing_compiles():
    plan = build_plan(_states(node01=('a', True), node02=('a', False), node03=('a', True)))
    assert plan == {'node01': {'builder': 'node02', 'build': False, 'install': True, 'pack': False},
                    'node02': {'builder': 'node02', 'build': False, 'install': False, 'pack': True},
                    'node03': {'builder': 'node02', 'build': False, 'install': True, 'pack': False}}


def test_a_lone_host_that_builds_packs_its_build_for_hosts_to_come():
    assert build_plan(_states(node01=('a', True))) == {
        'node01': {'builder': 'node01', 'build': True, 'install': False, 'pack': True}}


def test_named_build_host_that_has_the_build_packs_it_for_a_new_node_and_builds_nothing():
    plan = build_plan(_states(node01=('a', False), node02=('a', False), node03=('a', True)), 'node01')
    assert plan['node01'] == {'builder': 'node01', 'build': False, 'install': False, 'pack': True}
    assert plan['node03'] == {'builder': 'node01', 'build': False, 'install': True, 'pack': False}


def test_nothing_is_built_or_packed_when_every_host_has_the_build():
    plan = build_plan(_states(node01=('a', False), node02=('a', False)))
    assert not any(step[key] for step in plan.values() for key in ('build', 'install', 'pack'))
    assert {step['builder'] for step in plan.values()} == {'node01'}


def test_hosts_that_want_different_builds_each_get_their_own_builder():
    plan = build_plan(_states(cpu1=('plain', True), gpu1=('cuda', True), cpu2=('plain', True), gpu2=('cuda', True)))
    assert [plan[h]['builder'] for h in ('cpu1', 'cpu2', 'gpu1', 'gpu2')] == ['cpu1', 'cpu1', 'gpu1', 'gpu1']
    assert [h for h in plan if plan[h]['build']] == ['cpu1', 'gpu1']
    assert {h for h in plan if plan[h]['install']} == {'cpu2', 'gpu2'}


def test_a_build_host_outside_the_play_is_refused_by_name():
    with pytest.raises(ValueError, match='mpi_source_build_host builder9 is not a host of this play'):
        build_plan(_states(node01=('a', True)), 'builder9')


def test_a_build_host_that_wants_another_build_is_refused_naming_the_hosts_it_cannot_serve():
    with pytest.raises(ValueError, match='builds another stack than gpu1, gpu2 want'):
        build_plan(_states(cpu1=('plain', False), gpu1=('cuda', True), gpu2=('cuda', True)), 'cpu1')


def test_a_build_host_with_another_build_is_fine_where_that_group_needs_nothing():
    plan = build_plan(_states(cpu1=('plain', True), gpu1=('cuda', False)), 'cpu1')
    assert plan['gpu1'] == {'builder': 'gpu1', 'build': False, 'install': False, 'pack': False}
    assert plan['cpu1'] == {'builder': 'cpu1', 'build': True, 'install': False, 'pack': True}


@pytest.mark.parametrize('states', [{'node01': {'stamp': 'a'}}, {'node01': 'a'}])
def test_a_state_without_stamp_and_needed_is_refused(states):
    with pytest.raises(ValueError, match='node01: a build state needs stamp and needed'):
        build_plan(states)
