# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""ompi_info / ucx_info parsers on recorded outputs (tests/unit/fixtures/{ompi_info,ucx_info}, see SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import (
    MpiInfoParseError,
    mpi_facts,
    parse_ompi_info,
    parse_ucx_devices,
    parse_ucx_version,
)

CUDA_BUILD_TRANSPORTS = ['cma', 'cuda_copy', 'cuda_ipc', 'dc_mlx5', 'gdr_copy', 'posix', 'rc_mlx5', 'rc_verbs',
                         'self', 'sysv', 'tcp', 'ud_mlx5', 'ud_verbs']


def test_debian_full_output_is_not_cuda_aware_although_mpi_ext_lists_cuda(fixture_text):
    text = fixture_text('ompi_info', 'debian12-openmpi-4.1.4-parsable-all.txt')
    # the trap: Debian's build lists the cuda MPI extension yet has no CUDA support
    assert 'options:mpi_ext:affinity, cuda, pcollreq' in text.splitlines()
    facts, warnings = parse_ompi_info(text)
    assert facts == {'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': False}
    assert warnings == []


def test_mpi_extensions_line_with_cuda_and_value_false(fixture_text):
    facts, warnings = parse_ompi_info(fixture_text('ompi_info', 'debian12-openmpi-4.1.4-cuda-check.txt'))
    assert facts['cuda_aware'] is False
    assert facts['version'] is None
    assert warnings == ['ompi_info --parsable --all: no ompi:version:full line; version unknown']


def test_documented_cuda_aware_build_is_true(fixture_text):
    facts, warnings = parse_ompi_info(fixture_text('ompi_info', 'openmpi-docs-cuda-aware-check.txt'))
    assert facts['cuda_aware'] is True
    assert facts['implementation'] == 'Open MPI'
    assert len(warnings) == 1


def test_parsable_without_all_gives_version_and_null_cuda(fixture_text):
    facts, warnings = parse_ompi_info(fixture_text('ompi_info', 'openmpi-5.0.2-parsable-header.txt'))
    assert facts == {'implementation': 'Open MPI', 'version': '5.0.2', 'cuda_aware': None}
    assert len(warnings) == 1
    assert 'mpi_built_with_cuda_support:value' in warnings[0]


def test_unreadable_cuda_value_is_null_never_true(fixture_text):
    # the issue paste cut "false" to "fals" while its MPI extensions list names cuda
    facts, warnings = parse_ompi_info(fixture_text('ompi_info', 'openmpi-5.0.2-issue12334-truncated-value.txt'))
    assert facts['cuda_aware'] is None
    assert "'fals'" in warnings[0]


def test_mpi_extensions_alone_does_not_make_it_cuda_aware():
    with pytest.raises(MpiInfoParseError) as err:
        parse_ompi_info('          MPI extensions: affinity, cuda, pcollreq\n')
    assert err.value.command == 'ompi_info --parsable --all'


def test_human_readable_output_is_rejected_naming_the_line(fixture_text):
    with pytest.raises(MpiInfoParseError) as err:
        parse_ompi_info(fixture_text('ompi_info', 'openmpi-human-readable-all-grep-cuda.txt'))
    assert err.value.line == '          MPI extensions: affinity, cuda, pcollreq'
    assert '--parsable --all' in str(err.value)


def test_empty_ompi_info_output_is_rejected():
    with pytest.raises(MpiInfoParseError):
        parse_ompi_info('')


@pytest.mark.parametrize('name, version, with_cuda', [
    ('debian12-ucx-1.13.1-v.txt', '1.13.1', False),
    ('ucx-1.16.0-cuda-v.txt', '1.16.0', True),
    ('ucx-1.17.0-hpcx-v.txt', '1.17.0', True),
])
def test_ucx_version(fixture_text, name, version, with_cuda):
    facts, warnings = parse_ucx_version(fixture_text('ucx_info', name))
    assert facts == {'version': version, 'configured_with_cuda': with_cuda}
    assert warnings == []


@pytest.mark.parametrize('configured, expected', [
    ('--prefix=/usr --without-cuda --with-verbs', False),
    ('--with-cuda=no', False),
    ('--with-cuda --with-gdrcopy', True),
    ('--with-cuda=/usr/local/cuda --without-cuda', False),
    ('--without-cuda --with-cuda=/usr/local/cuda-12.4', True),
    ('--with-cuda-libdir=/x --with-verbs', False),
])
def test_ucx_configure_flags(configured, expected):
    # the Debian 1.13.1 version line with the configure flags varied
    facts, dummy = parse_ucx_version('# Version 1.13.1\n# Configured with: %s\n' % configured)
    assert facts['configured_with_cuda'] is expected


def test_ucx_build_config_lines_count(fixture_text):
    # `ucx_info -b` lines: the Debian flags without CUDA, then a CUDA build's HAVE_CUDA define
    without = '#define UCX_CONFIGURE_FLAGS       "--prefix=/usr --with-verbs --enable-cma"\n'
    assert parse_ucx_version(without)[0]['configured_with_cuda'] is False
    with_cuda = without + '#define HAVE_CUDA                 1\n'
    facts, warnings = parse_ucx_version(with_cuda)
    assert facts == {'version': None, 'configured_with_cuda': True}
    assert warnings == ['ucx_info -v: no version line; UCX version unknown']


def test_ucx_version_without_configure_line_is_unknown():
    facts, warnings = parse_ucx_version('# Version 1.13.1\n')
    assert facts == {'version': '1.13.1', 'configured_with_cuda': None}
    assert len(warnings) == 1


def test_ucx_version_garbage_is_rejected():
    with pytest.raises(MpiInfoParseError) as err:
        parse_ucx_version('ucx_info: error while loading shared libraries: libgdrapi.so.1\n')
    assert err.value.command == 'ucx_info -v'
    assert err.value.line.startswith('ucx_info: error while loading')


def test_debian_transports_have_no_cuda(fixture_text):
    transports, warnings = parse_ucx_devices(fixture_text('ucx_info', 'debian12-ucx-1.13.1-d.txt'))
    assert transports == ['cma', 'posix', 'self', 'sysv', 'tcp']
    assert 'cuda_copy' not in transports
    assert warnings == []


@pytest.mark.parametrize('name', ['ucx-1.16.0-cuda-d.txt', 'ucx-1.17.0-hpcx-d-grep-transport.txt'])
def test_cuda_build_transports(fixture_text, name):
    transports, warnings = parse_ucx_devices(fixture_text('ucx_info', name))
    assert transports == CUDA_BUILD_TRANSPORTS
    assert warnings == []


def test_memory_domains_without_transports_warn():
    transports, warnings = parse_ucx_devices('#\n# Memory domain: mlx5_1\n#     Component: ib\n'
                                             '#   < no supported devices found >\n')
    assert transports == []
    assert len(warnings) == 1


def test_devices_garbage_is_rejected():
    with pytest.raises(MpiInfoParseError) as err:
        parse_ucx_devices('Segmentation fault (core dumped)\n')
    assert err.value.line == 'Segmentation fault (core dumped)'


def test_mpi_facts_combines_all_three(fixture_text):
    facts, warnings = mpi_facts(fixture_text('ompi_info', 'debian12-openmpi-4.1.4-parsable-all.txt'),
                                fixture_text('ucx_info', 'debian12-ucx-1.13.1-v.txt'),
                                fixture_text('ucx_info', 'debian12-ucx-1.13.1-d.txt'))
    assert facts == {
        'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': False,
        'ucx': {'version': '1.13.1', 'configured_with_cuda': False,
                'transports': ['cma', 'posix', 'self', 'sysv', 'tcp']},
    }
    assert warnings == []


def test_mpi_facts_with_only_ucx_texts(fixture_text):
    facts, warnings = mpi_facts(None, fixture_text('ucx_info', 'ucx-1.16.0-cuda-v.txt'),
                                fixture_text('ucx_info', 'ucx-1.16.0-cuda-d.txt'))
    assert facts['implementation'] is None
    assert facts['cuda_aware'] is None
    assert facts['ucx'] == {'version': '1.16.0', 'configured_with_cuda': True, 'transports': CUDA_BUILD_TRANSPORTS}
    assert warnings == []
