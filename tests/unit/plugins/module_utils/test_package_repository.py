# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The files that add a signed package repository, and its two users: the rdma role's DOCA-OFED repository and the
slurm role's site repository (module_utils/package_repository.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.package_repository import (
    APT_PIN_PRIORITY,
    apt_repository,
    apt_suite_problem,
    repository_files,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.rdma_stack import DOCA_FILES, doca_repository
from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_install import site_repository


def test_files_are_named_after_the_repository_per_package_manager():
    assert repository_files('slurm', 'apt') == {'key': '/etc/apt/keyrings/hpcfabric-slurm.asc',
                                                'repo': '/etc/apt/sources.list.d/hpcfabric-slurm.sources',
                                                'pin': '/etc/apt/preferences.d/hpcfabric-slurm.pref'}
    assert repository_files('doca', 'dnf') == {'key': '/etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-doca',
                                               'repo': '/etc/yum.repos.d/hpcfabric-doca.repo'}


@pytest.mark.parametrize('name, kind, message', [
    ('slurm', 'zypper', "repository kind must be one of apt, dnf, got 'zypper'"),
    ('../slurm', 'apt', "a repository name is lower-case letters, digits and -, got '../slurm'"),
    ('', 'apt', "a repository name is lower-case letters, digits and -, got ''"),
])
def test_files_refuse_what_would_not_be_one_file_name(name, kind, message):
    with pytest.raises(ValueError, match=message.replace('.', r'\.')):
        repository_files(name, kind)


def test_a_flat_repository_is_signed_by_its_key_file_and_pinned_to_its_host():
    url = 'http://10.77.12.1:8080/'
    assert apt_repository('slurm', url) == {
        'files': repository_files('slurm', 'apt'),
        'apt_source': {'Types': 'deb', 'URIs': url, 'Suites': './', 'Signed-By': '/etc/apt/keyrings/hpcfabric-slurm.asc'},
        # apt matches Pin: origin against the host name alone (seen with apt 2.6: a repository on 127.0.0.1:8765
        # was pinned by origin "127.0.0.1")
        'apt_pin': {'origin': '10.77.12.1', 'priority': 600}}


def test_a_distribution_under_dists_has_its_components_before_the_key():
    source = apt_repository('slurm', 'https://repo.example.com/slurm', 'bookworm', ['main', 'contrib'])['apt_source']
    assert list(source.items()) == [('Types', 'deb'), ('URIs', 'https://repo.example.com/slurm'),
                                    ('Suites', 'bookworm'), ('Components', 'main contrib'),
                                    ('Signed-By', '/etc/apt/keyrings/hpcfabric-slurm.asc')]


def test_a_file_repository_has_apt_s_empty_origin_and_the_pin_stays_below_a_downgrade():
    assert apt_repository('slurm', 'file:///srv/slurm/')['apt_pin'] == {'origin': '', 'priority': 600}
    assert 500 < APT_PIN_PRIORITY < 1000


@pytest.mark.parametrize('suite, components, expected', [
    ('./', [], None),
    ('amd64/', [], None),
    ('bookworm', ['main'], None),
    ('./', ['main'], ('components', 'must be empty for suite ./, a flat repository (its suite ends with /), got main')),
    ('stable', [], ('components', "is empty, but suite stable is a distribution under dists/, which needs its "
                                  "components (main, ...); a flat repository's suite ends with / (./)")),
    ('', [], ('suite', "'' is not an apt suite (a word such as stable, or a path ending in / such as ./ for a flat "
                       'repository)')),
    ('./\nTrusted: yes', [], ('suite', "'./\\nTrusted: yes' is not an apt suite (a word such as stable, or a path "
                                       'ending in / such as ./ for a flat repository)')),
    ('stable', ['main contrib'], ('components', "must be a list of words such as main, got ['main contrib']")),
    ('stable', 'main', ('components', "must be a list of words such as main, got 'main'")),
])
def test_suite_and_components_follow_apt_s_deb822_rule(suite, components, expected):
    assert apt_suite_problem(suite, components) == expected


def test_a_repository_apt_would_refuse_is_not_built():
    with pytest.raises(ValueError, match='components: must be empty for suite ./'):
        apt_repository('slurm', 'https://repo.example.com/slurm/', './', ['main'])
    with pytest.raises(ValueError, match='the repository URL must be a non-empty string, got None'):
        apt_repository('slurm', None)


# --- the two users ------------------------------------------------------------------------------------------------

def test_rdma_s_doca_repository_is_the_flat_repository_named_doca():
    url = 'https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/'
    assert doca_repository(url, 'apt') == apt_repository('doca', url)
    assert DOCA_FILES == {'apt': repository_files('doca', 'apt'), 'dnf': repository_files('doca', 'dnf')}


def test_slurm_s_site_repository_is_the_same_source_with_a_pin_on_slurm_s_packages():
    url = 'http://10.77.12.1:8080/'
    repository = site_repository(url)
    pin = repository['apt_pin']
    assert pin.pop('packages') == 'slurm* libslurm* libpmi0* libpmi2-* libpam-slurm* sview'
    assert repository == apt_repository('slurm', url)
