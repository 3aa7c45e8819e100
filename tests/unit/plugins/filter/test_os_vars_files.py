# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The layering rule of every role's per-OS variables."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.os_vars_files import FilterModule

os_vars_files = FilterModule().filters()['os_vars_files']

UBUNTU = {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_major_version': '24'}
DEBIAN = {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_major_version': '12'}
ROCKY = {'os_family': 'RedHat', 'distribution': 'Rocky', 'distribution_major_version': '9'}


@pytest.fixture
def role(tmp_path):
    (tmp_path / 'vars').mkdir()
    for name in ('main', 'Debian', 'Debian_12', 'Ubuntu', 'Ubuntu_24', 'RedHat', 'RedHat_9'):
        (tmp_path / 'vars' / (name + '.yml')).write_text('---\n')
    return tmp_path


def names(paths):
    return [p.rsplit('/', 1)[1] for p in paths]


def test_least_specific_first(role):
    assert names(os_vars_files(str(role), UBUNTU)) == ['Debian.yml', 'Ubuntu.yml', 'Ubuntu_24.yml']


def test_a_layer_named_twice_is_loaded_once(role):
    # Debian is both the OS family and the distribution
    assert names(os_vars_files(str(role), DEBIAN)) == ['Debian.yml', 'Debian_12.yml']


def test_the_family_release_file_serves_every_rebuild(role):
    assert names(os_vars_files(str(role), ROCKY)) == ['RedHat.yml', 'RedHat_9.yml']


def test_an_os_without_files_is_refused_naming_it_and_what_the_role_supports(role):
    with pytest.raises(AnsibleFilterError) as exc:
        os_vars_files(str(role), {'os_family': 'Suse', 'distribution': 'SLES', 'distribution_major_version': '15'})
    assert str(exc.value) == ('os_vars_files: role %s does not support SLES 15: it has variables for Debian, '
                              'Debian_12, RedHat, RedHat_9, Ubuntu, Ubuntu_24 only' % role.name)


def test_missing_facts_are_named():
    with pytest.raises(AnsibleFilterError, match='os_vars_files: the facts lack distribution_major_version'):
        os_vars_files('/nowhere', {'os_family': 'Debian', 'distribution': 'Debian'})
