# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""os_packages: which OS packages a host lacks, from dpkg's or rpm's own listing (no python3-apt)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_packages import installed_names, missing, query_argv

# dpkg-query with query_argv('Debian')'s format on a Debian 12 host (this project's CI image), lines kept verbatim
BOOKWORM = [
    'apt\tii \tapt-transport-https (= 2.6.1)',
    'automake\tii \tautomake-1.16, automaken',
    'tar\tii \t',
    'zlib1g\tii \tlibz1',
]
# librdmacm1t64 on Debian 13 as dpkg prints it: its Provides field is the archive's (trixie main Packages, rdma-core
# 56.1-1: "Provides: librdmacm1 (= 56.1-1)")
TRIXIE_RDMACM = 'librdmacm1t64\tii \tlibrdmacm1 (= 56.1-1)'


def test_a_package_is_there_by_its_name_or_what_it_provides():
    assert installed_names(BOOKWORM + [TRIXIE_RDMACM]) >= {'apt', 'apt-transport-https', 'automake-1.16', 'automaken',
                                                           'tar', 'libz1', 'librdmacm1t64', 'librdmacm1'}
    assert missing(['tar', 'librdmacm1', 'libnuma1', 'tar'], BOOKWORM + [TRIXIE_RDMACM]) == ['libnuma1']


def test_only_installed_packages_count():
    # dpkg keeps removed packages' config files (rc), half-installed (iH) and unpacked-only (iU) ones
    lines = ['libnuma1\trc \t', 'libibverbs1\tiU \t', 'librdmacm1t64\tiH \tlibrdmacm1 (= 56.1-1)', 'gzip\thi \t']
    assert missing(['libnuma1', 'libibverbs1', 'librdmacm1', 'gzip'], lines) == ['libnuma1', 'libibverbs1', 'librdmacm1']


def test_rpm_lines_and_a_string_of_output():
    out = 'numactl-libs\tii\tlibnuma.so.1()(64bit), numactl-libs(x86-64), \nzlib\tii\tlibz.so.1()(64bit), zlib, \n'
    assert missing(['zlib', 'numactl-libs', 'librdmacm'], out) == ['librdmacm']


def test_an_architecture_qualifier_is_not_part_of_the_name():
    assert missing(['libc6:amd64', 'libc6'], ['libc6:amd64\tii \t']) == []


@pytest.mark.parametrize('wanted', ['tar', ['tar', ''], [None]])
def test_the_wanted_names_must_be_a_list_of_names(wanted):
    with pytest.raises(ValueError, match='must be a list of names'):
        missing(wanted, BOOKWORM)


def test_an_os_family_without_a_query_is_named():
    with pytest.raises(ValueError, match="no package query for OS family 'Suse': known are Debian, RedHat"):
        query_argv('Suse')


@pytest.mark.skipif(not shutil.which('dpkg-query'), reason='needs dpkg')
def test_the_query_on_this_host():
    lines = subprocess.run(query_argv('Debian'), capture_output=True, text=True, check=True).stdout.splitlines()
    assert missing(['tar', 'dpkg', 'hpcfabric-no-such-package'], lines) == ['hpcfabric-no-such-package']
    assert all(line.count('\t') == 2 for line in lines)
