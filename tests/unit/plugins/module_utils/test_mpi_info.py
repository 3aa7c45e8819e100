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
    stack_problems,
)

# the coll components of Debian's Open MPI builds: no ucc (Debian packages no UCC), no cuda (not CUDA-aware)
DEBIAN12_COLL = ['adapt', 'basic', 'han', 'inter', 'libnbc', 'monitoring', 'self', 'sm', 'sync', 'tuned']
DEBIAN13_COLL = ['adapt', 'basic', 'ftagree', 'han', 'inter', 'libnbc', 'monitoring', 'self', 'sm', 'sync', 'tuned']
CUDA_BUILD_TRANSPORTS = ['cma', 'cuda_copy', 'cuda_ipc', 'dc_mlx5', 'gdr_copy', 'posix', 'rc_mlx5', 'rc_verbs',
                         'self', 'sysv', 'tcp', 'ud_mlx5', 'ud_verbs']


def test_debian_full_output_is_not_cuda_aware_although_mpi_ext_lists_cuda(fixture_text):
    text = fixture_text('ompi_info', 'debian12-openmpi-4.1.4-parsable-all.txt')
    # the trap: Debian's build lists the cuda MPI extension yet has no CUDA support
    assert 'options:mpi_ext:affinity, cuda, pcollreq' in text.splitlines()
    facts, warnings = parse_ompi_info(text)
    assert facts == {'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': False,
                     'coll_components': DEBIAN12_COLL}
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
    assert facts == {'implementation': 'Open MPI', 'version': '5.0.2', 'cuda_aware': None, 'coll_components': None}
    assert len(warnings) == 1
    assert 'mpi_built_with_cuda_support:value' in warnings[0]


def test_unreadable_cuda_value_is_null_never_true(fixture_text):
    # the issue paste cut "false" to "fals" while its MPI extensions list names cuda
    facts, warnings = parse_ompi_info(fixture_text('ompi_info', 'openmpi-5.0.2-issue12334-truncated-value.txt'))
    assert facts['cuda_aware'] is None
    assert "'fals'" in warnings[0]


def test_mpi_extensions_alone_does_not_make_it_cuda_aware(fixture_text):
    # `ompi_info | grep -i cuda` without --all, on Open MPI 4 and 5: the extensions list is all it shows
    for name in ('debian12-openmpi-4.1.4-grep-cuda.txt', 'debian13-openmpi-5.0.7-grep-cuda.txt'):
        text = fixture_text('ompi_info', name)
        assert 'cuda' in text and len(text.splitlines()) == 1
        facts, warnings = parse_ompi_info(text)
        assert facts == {'implementation': 'Open MPI', 'version': None, 'cuda_aware': None, 'coll_components': None}
        assert len(warnings) == 2
        assert warnings[1].startswith('ompi_info (human-readable form): no "mpi_built_with_cuda_support" parameter')
        assert 'names cuda on builds without CUDA support' in warnings[1]


@pytest.mark.parametrize('name', ['debian12-openmpi-4.1.4-all-grep-cuda.txt', 'debian13-openmpi-5.0.7-all-grep-cuda.txt',
                                  'openmpi-human-readable-all-grep-cuda.txt'])
def test_human_readable_grep_cuda_gives_cuda_aware(fixture_text, name):
    # `ompi_info --all | grep -i cuda`: Open MPI 4.1.4 and 5.0.7 print the opal_ informational line with
    # the mpi_ name as a synonym and the mpi_ parameter line; the 2020 paste has only the opal_ line
    text = fixture_text('ompi_info', name)
    assert 'MPI extensions: affinity, cuda' in text
    facts, warnings = parse_ompi_info(text)
    assert facts == {'implementation': 'Open MPI', 'version': None, 'cuda_aware': False, 'coll_components': None}
    assert warnings == ["ompi_info (human-readable form): no 'Open MPI:' line; version unknown"]


def test_human_readable_true_value_and_version_line(fixture_text):
    # the Open MPI 5.0.7 lines with the value a CUDA-aware build prints, and the version line of plain ompi_info
    text = fixture_text('ompi_info', 'debian13-openmpi-5.0.7-all-grep-cuda.txt').replace(
        '"mpi_built_with_cuda_support" (current value: "false"', '"mpi_built_with_cuda_support" (current value: "true"').replace(
        '"opal_built_with_cuda_support" (current value: "false"', '"opal_built_with_cuda_support" (current value: "true"')
    facts, warnings = parse_ompi_info('                Open MPI: 5.0.7\n' + text)
    assert facts == {'implementation': 'Open MPI', 'version': '5.0.7', 'cuda_aware': True, 'coll_components': None}
    assert warnings == []


def test_open_mpi_5_full_parsable_output(fixture_text):
    text = fixture_text('ompi_info', 'debian13-openmpi-5.0.7-parsable-all.txt')
    assert 'mca:opal:base:param:opal_built_with_cuda_support:synonym:name:mpi_built_with_cuda_support' in text
    facts, warnings = parse_ompi_info(text)
    assert facts == {'implementation': 'Open MPI', 'version': '5.0.7', 'cuda_aware': False,
                     'coll_components': DEBIAN13_COLL}
    assert warnings == []


def test_open_mpi_5_opal_name_alone_is_read(fixture_text):
    # `grep opal_built_with_cuda_support`: the value under the opal_ name, mpi_ only as its synonym:name
    text = fixture_text('ompi_info', 'debian13-openmpi-5.0.7-parsable-grep-opal.txt')
    assert 'mca:mpi:base:param:mpi_built_with_cuda_support:value' not in text
    facts, warnings = parse_ompi_info(text)
    assert facts['cuda_aware'] is False
    assert warnings == ['ompi_info --parsable --all: no ompi:version:full line; version unknown']
    as_true = text.replace('opal_built_with_cuda_support:value:false', 'opal_built_with_cuda_support:value:true')
    assert parse_ompi_info(as_true)[0]['cuda_aware'] is True


def test_disagreeing_cuda_lines_leave_it_unknown(fixture_text):
    text = fixture_text('ompi_info', 'debian13-openmpi-5.0.7-no-proc-ucx-error.txt').replace(
        'mca:opal:base:param:opal_built_with_cuda_support:value:false',
        'mca:opal:base:param:opal_built_with_cuda_support:value:true')
    facts, warnings = parse_ompi_info(text)
    assert facts['cuda_aware'] is None
    assert 'disagree' in warnings[0]


def test_ucx_error_line_in_ompi_info_output_is_skipped_and_named(fixture_text):
    # recorded in a chroot without /proc: UCX logs to stdout before ompi_info prints anything
    text = fixture_text('ompi_info', 'debian13-openmpi-5.0.7-no-proc-ucx-error.txt')
    facts, warnings = parse_ompi_info(text)
    assert facts == {'implementation': 'Open MPI', 'version': '5.0.7', 'cuda_aware': False, 'coll_components': None}
    assert len(warnings) == 1
    assert warnings[0].startswith("ompi_info: ignored unreadable line 1: '[")
    assert warnings[0].endswith("UCX  ERROR failed to get boot id'")


def test_terminal_escapes_in_a_pasted_ompi_info(fixture_text):
    text = fixture_text('ompi_info', 'debian12-openmpi-4.1.4-cuda-check.txt')
    coloured = text.replace('mca:mpi', '^[[01;31m^[[Kmca:mpi').replace(':value:false', ':value:false^[[m^[[K')
    assert parse_ompi_info(coloured) == parse_ompi_info(text)


def test_foreign_text_is_rejected_naming_the_line():
    with pytest.raises(MpiInfoParseError) as err:
        parse_ompi_info('bash: ompi_info: command not found\n')
    assert err.value.line == 'bash: ompi_info: command not found'
    assert '--parsable --all' in str(err.value)


def test_empty_ompi_info_output_is_rejected():
    with pytest.raises(MpiInfoParseError):
        parse_ompi_info('')


@pytest.mark.parametrize('name, version, with_cuda', [
    ('debian12-ucx-1.13.1-v.txt', '1.13.1', False),
    ('debian13-ucx-1.18.1-v.txt', '1.18.1', False),
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


def test_ucx_error_line_in_version_output_is_skipped_and_named(fixture_text):
    facts, warnings = parse_ucx_version(fixture_text('ucx_info', 'debian13-ucx-1.18.1-v-no-proc.txt'))
    assert facts == {'version': '1.18.1', 'configured_with_cuda': False}
    assert len(warnings) == 1
    assert warnings[0].startswith("ucx_info -v: ignored unreadable line 1: '[")
    assert warnings[0].endswith("sys.c:306  UCX  ERROR failed to get boot id'")


def test_debian13_transports(fixture_text):
    transports, warnings = parse_ucx_devices(fixture_text('ucx_info', 'debian13-ucx-1.18.1-d.txt'))
    assert transports == ['cma', 'posix', 'self', 'sysv', 'tcp']
    assert warnings == []


def test_ucx_error_lines_in_devices_output_keep_the_rest(fixture_text):
    # without /sys the tcp domain has no device: the transports listed are what UCX found, the errors are named
    transports, warnings = parse_ucx_devices(fixture_text('ucx_info', 'debian13-ucx-1.18.1-d-no-proc.txt'))
    assert transports == ['cma', 'posix', 'self', 'sysv']
    assert len(warnings) == 5
    assert "UCX  ERROR scandir(/sys/class/net) failed: No such file or directory'" in warnings[2]
    assert all(warning.startswith('ucx_info -d: ignored unreadable line ') for warning in warnings)


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


@pytest.mark.parametrize('release, ompi, ucx', [('debian12', '4.1.4', '1.13.1'), ('debian13', '5.0.7', '1.18.1')])
def test_mpi_facts_combines_all_three(fixture_text, release, ompi, ucx):
    facts, warnings = mpi_facts(fixture_text('ompi_info', '%s-openmpi-%s-parsable-all.txt' % (release, ompi)),
                                fixture_text('ucx_info', '%s-ucx-%s-v.txt' % (release, ucx)),
                                fixture_text('ucx_info', '%s-ucx-%s-d.txt' % (release, ucx)))
    assert facts == {
        'implementation': 'Open MPI', 'version': ompi, 'cuda_aware': False,
        'coll_components': DEBIAN12_COLL if release == 'debian12' else DEBIAN13_COLL,
        'ucx': {'version': ucx, 'configured_with_cuda': False,
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


def _facts(fixture_text, ompi, ucx_v, ucx_d):
    return mpi_facts(fixture_text('ompi_info', ompi), fixture_text('ucx_info', ucx_v), fixture_text('ucx_info', ucx_d))[0]


def test_debian_distro_stack_is_what_a_cpu_site_asks_for_and_named_twice_for_a_cuda_one(fixture_text):
    facts = _facts(fixture_text, 'debian12-openmpi-4.1.4-parsable-all.txt', 'debian12-ucx-1.13.1-v.txt', 'debian12-ucx-1.13.1-d.txt')
    assert stack_problems(facts, expected={'ompi': '4.1.4', 'ucx': '1.13.1'}) == []
    assert stack_problems(facts, cuda=True) == [
        'Open MPI is not CUDA-aware (mpi_built_with_cuda_support: false)',
        'UCX was not configured with CUDA (ucx_info -v: no --with-cuda)']


def test_a_cuda_build_read_without_a_driver_passes_on_its_build_facts_alone(fixture_text):
    facts = _facts(fixture_text, 'debian12-openmpi-4.1.4-cuda-source-parsable-all.txt',
                   'debian12-ucx-1.13.1-cuda-source-v.txt', 'debian12-ucx-1.13.1-cuda-source-d.txt')
    assert facts == {'implementation': 'Open MPI', 'version': '4.1.4', 'cuda_aware': True,
                     'coll_components': sorted(DEBIAN12_COLL + ['cuda']),
                     'ucx': {'version': '1.13.1', 'configured_with_cuda': True,
                             'transports': ['cma', 'posix', 'self', 'sysv', 'tcp']}}
    assert stack_problems(facts, cuda=True, gpu_driver=False, expected={'ompi': '4.1.4', 'ucx': '1.13.1'}) == []
    # the same answers on a node whose driver is loaded mean UCX cannot use the GPU there
    assert stack_problems(facts, cuda=True, gpu_driver=True) == [
        'UCX lists no cuda_copy/cuda_ipc transport although the NVIDIA driver is loaded '
        '(ucx_info -d: cma,posix,self,sysv,tcp)']


def test_a_cuda_build_read_with_its_driver_needs_nothing_more(fixture_text):
    facts = _facts(fixture_text, 'openmpi-docs-cuda-aware-check.txt', 'ucx-1.16.0-cuda-v.txt', 'ucx-1.16.0-cuda-d.txt')
    assert stack_problems(facts, cuda=True, gpu_driver=True) == []


def test_versions_other_than_installed_and_another_mpi_are_named():
    facts = {'implementation': 'MPICH', 'version': '4.2.0', 'cuda_aware': None, 'coll_components': None,
             'ucx': {'version': None, 'configured_with_cuda': None, 'transports': []}}
    assert stack_problems(facts, cuda=True, expected={'ompi': '4.1.4', 'ucx': '1.13.1'}) == [
        'the MPI is MPICH, not Open MPI',
        'Open MPI is version 4.2.0, expected 4.1.4',
        'UCX is version unknown, expected 1.13.1',
        'Open MPI is not CUDA-aware (mpi_built_with_cuda_support: unknown)',
        'UCX was not configured with CUDA (ucx_info -v: build flags unknown)']


def test_coll_components_name_ucc_where_the_build_has_it(fixture_text):
    # UCC's user guide: the one line `ompi_info | grep ucc` prints for an Open MPI built with UCC
    facts, dummy = parse_ompi_info(fixture_text('ompi_info', 'openucx-ucc-user-guide-grep-ucc.txt'))
    assert facts['coll_components'] == ['ucc']
    assert stack_problems(dict(facts, ucx={}), ucc=True) == []


def test_mpi_ucc_on_a_build_without_coll_ucc_is_named(fixture_text):
    facts = mpi_facts(fixture_text('ompi_info', 'debian12-openmpi-4.1.4-parsable-all.txt'))[0]
    assert stack_problems(facts) == []
    assert stack_problems(facts, ucc=True) == [
        'mpi_ucc asks for the coll/ucc component, which this Open MPI lacks (coll components: adapt, basic, han, inter, '
        'libnbc, monitoring, self, sm, sync, tuned): HPC-X has it; a source build needs UCC and --with-ucc']
    # a CUDA-aware source build has coll/cuda, which stages device buffers through host memory
    cuda = parse_ompi_info(fixture_text('ompi_info', 'debian12-openmpi-4.1.4-cuda-source-parsable-all.txt'))[0]
    assert 'cuda' in cuda['coll_components'] and 'ucc' not in cuda['coll_components']
