# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The source flavour's configure flags (module_utils/mpi_source.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_source import configure_flags

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
