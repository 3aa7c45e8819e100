# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's install (module_utils/slurm_install.py): each host's packages from the role's real vars files and
the site's names, the site repository's pin, and the installed version read from recorded -V outputs."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_install import (
    install_plan,
    parse_version,
    pin_packages,
    site_repository,
    version_problems,
)

ROLE = Path(__file__).resolve().parents[4] / 'roles' / 'slurm'
DEBIAN = yaml.safe_load((ROLE / 'vars' / 'Debian.yml').read_text())
# SchedMD's own Debian packaging (debian/control of Slurm 23.11 and later)
SMD = {'controller': ['slurm-smd-slurmctld', 'slurm-smd-client'], 'compute': ['slurm-smd-slurmd', 'slurm-smd-client'],
       'accounting': ['slurm-smd-slurmdbd']}
FILES = {'key': '/etc/apt/keyrings/hpcfabric-slurm.asc', 'repo': '/etc/apt/sources.list.d/hpcfabric-slurm.sources',
         'pin': '/etc/apt/preferences.d/hpcfabric-slurm.pref'}


def plan(parts, **settings):
    return install_plan(dict({'parts': parts, 'distro_packages': DEBIAN['__slurm_distro_packages'],
                              'support_packages': DEBIAN['__slurm_support_packages'], 'repo_suite': './',
                              'repo_components': []}, **settings))


def test_the_distribution_s_packages_as_before_a_site_repository():
    # the lists the role installed before slurm_packages existed, in the same order
    assert plan(['controller']) == {'packages': ['slurmctld', 'slurm-client', 'munge', 'libpmix-dev'],
                                    'daemons': ['slurmctld'], 'files': FILES, 'repository': None}
    assert plan(['compute'])['packages'] == ['slurmd', 'slurm-client', 'munge', 'libpmix-dev']
    both = plan(['controller', 'compute', 'accounting'])
    assert both['packages'] == ['slurmctld', 'slurm-client', 'munge', 'libpmix-dev', 'slurmd', 'slurmdbd',
                                'mariadb-server']
    # slurmdbd -V reads slurmdbd.conf before it prints anything: the controller's slurmctld stands for it
    assert both['daemons'] == ['slurmctld', 'slurmd']


def test_the_site_s_names_replace_slurm_s_packages_of_each_part_and_munge_pmix_and_mariadb_stay():
    both = plan(['compute', 'controller', 'accounting'], site_packages=SMD)
    assert both['packages'] == ['slurm-smd-slurmctld', 'slurm-smd-client', 'munge', 'libpmix-dev', 'slurm-smd-slurmd',
                                'slurm-smd-slurmdbd', 'mariadb-server']
    # a part the site does not name keeps the distribution's names; a null part is one not named
    partial = plan(['controller', 'compute'], site_packages={'compute': ['site-slurmd'], 'controller': None})
    assert partial['packages'] == ['slurmctld', 'slurm-client', 'munge', 'libpmix-dev', 'site-slurmd']


def test_a_host_without_parts_installs_nothing():
    assert plan([]) == {'packages': [], 'daemons': [], 'files': FILES, 'repository': None}


@pytest.mark.parametrize('parts, settings, message', [
    (['login'], {}, 'parts must be among controller, compute, accounting, got login'),
    (['compute'], {'site_packages': {'compute': 'slurm-smd-slurmd'}},
     "slurm_packages.compute must be a list of package names, got 'slurm-smd-slurmd'"),
    (['compute'], {'site_packages': ['slurm-smd-slurmd']},
     r"slurm_packages must be a mapping of part to package names, got \['slurm-smd-slurmd'\]"),
])
def test_a_plan_it_cannot_make_is_refused_by_name(parts, settings, message):
    with pytest.raises(ValueError, match=message):
        plan(parts, **settings)


def test_with_a_repository_the_plan_holds_its_source_and_pin():
    repository = plan(['compute'], site_packages=SMD, repo_url='http://10.77.12.1:8080/')['repository']
    assert repository['files'] == FILES
    assert repository['apt_source'] == {'Types': 'deb', 'URIs': 'http://10.77.12.1:8080/', 'Suites': './',
                                        'Signed-By': FILES['key']}
    assert repository['apt_pin'] == {'origin': '10.77.12.1', 'priority': 600,
                                     'packages': 'slurm* libslurm* libpmi0* libpmi2-* libpam-slurm* sview'}


def test_the_pin_holds_slurm_s_globs_and_each_site_name_they_miss_once():
    assert pin_packages() == 'slurm* libslurm* libpmi0* libpmi2-* libpam-slurm* sview'
    # SchedMD's slurm-smd-* and Debian's names all match slurm*
    assert pin_packages(SMD) == pin_packages(DEBIAN['__slurm_distro_packages']) == pin_packages()
    assert pin_packages({'controller': ['hpc-slurmctld', 'slurm-client'], 'compute': ['hpc-slurmd', 'hpc-slurmctld']}) \
        == 'slurm* libslurm* libpmi0* libpmi2-* libpam-slurm* sview hpc-slurmctld hpc-slurmd'


def test_the_site_repository_under_dists_names_its_components():
    source = site_repository('https://repo.example.com/slurm', 'bookworm', ['main'])['apt_source']
    assert (source['Suites'], source['Components']) == ('bookworm', 'main')


# --- the installed version ----------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, expected', [
    ('slurmctld-V-22.05.8.txt', {'package': 'slurm-wlm', 'version': '22.05.8', 'major_minor': '22.05'}),
    ('slurmd-V-22.05.8.txt', {'package': 'slurm-wlm', 'version': '22.05.8', 'major_minor': '22.05'}),
    ('slurmctld-V-24.11.5.txt', {'package': 'slurm-wlm', 'version': '24.11.5', 'major_minor': '24.11'}),
    ('slurmd-V-24.11.5.txt', {'package': 'slurm-wlm', 'version': '24.11.5', 'major_minor': '24.11'}),
])
def test_debian_s_daemons_print_slurm_wlm_and_the_version(fixture_text, name, expected):
    assert parse_version(fixture_text('slurm', name)) == expected


@pytest.mark.parametrize('text, expected', [
    # SchedMD's packages and a source build: configure's PACKAGE_NAME, slurm
    ('slurm 23.11.4\n', {'package': 'slurm', 'version': '23.11.4', 'major_minor': '23.11'}),
    ('slurm 24.05.0-0rc1\n', {'package': 'slurm', 'version': '24.05.0-0rc1', 'major_minor': '24.05'}),
    ('\n  slurm 25.11.2  \n', {'package': 'slurm', 'version': '25.11.2', 'major_minor': '25.11'}),
])
def test_other_builds_print_slurm_and_the_version(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize('text, shown', [
    ('', "''"),
    ('slurmctld: error: Unable to open pidfile\n', "'slurmctld: error: Unable to open pidfile'"),
    ('slurm-wlm\n', "'slurm-wlm'"),
])
def test_output_without_a_version_is_named(text, shown):
    with pytest.raises(ValueError, match='%s is not a Slurm version line' % shown):
        parse_version(text)


def run(daemon, text, rc=0, stderr=''):
    """One result of the role's looped command, as Ansible registers it."""
    return {'item': daemon, 'rc': rc, 'stdout': text, 'stderr': stderr, 'changed': False}


def test_the_planned_version_passes_whatever_the_micro_version(fixture_text):
    results = [run('slurmctld', fixture_text('slurm', 'slurmctld-V-22.05.8.txt')),
               run('slurmd', fixture_text('slurm', 'slurmd-V-22.05.8.txt'))]
    assert version_problems(results, '22.05', None, 'node01') == []
    assert version_problems(results, '22.05.2', '22.05.2', 'node01') == []
    assert version_problems([], '24.11', '24.11', 'node01') == []


def test_the_distribution_s_slurm_where_the_site_s_was_planned_names_slurm_version_and_the_host(fixture_text):
    results = [run('slurmd', fixture_text('slurm', 'slurmd-V-22.05.8.txt'))]
    assert version_problems(results, '23.11', '23.11', 'node02') == [
        'slurm_version on node02: slurmd -V says slurm-wlm 22.05.8, but the role planned Slurm 23.11 (slurm_version): '
        'set slurm_version to 22.05 if these packages are the ones meant, or install the planned version (the role '
        'installs missing packages and upgrades none)']


def test_a_distribution_other_than_planned_says_slurm_version_is_unset(fixture_text):
    results = [run('slurmctld', fixture_text('slurm', 'slurmctld-V-24.11.5.txt'))]
    assert version_problems(results, '22.05', None, 'node01') == [
        "slurm_version on node01: slurmctld -V says slurm-wlm 24.11.5, but the role planned Slurm 22.05 (the "
        "distribution's, slurm_version unset): set slurm_version to 24.11 if these packages are the ones meant, or "
        'install the planned version (the role installs missing packages and upgrades none)']


def test_a_daemon_that_fails_or_prints_no_version_is_named_beside_the_others(fixture_text):
    # a command that is not there, as ansible-core 2.21 registers it under failed_when: false
    missing = {'item': 'slurmctld', 'rc': 2, 'msg': 'Error executing command.', 'stdout': '', 'stderr': '',
               'cmd': 'slurmctld -V', 'changed': False, 'failed': False}
    results = [missing,
               run('slurmdbd', '', rc=127, stderr='slurmdbd: error while loading shared libraries: libslurmfull.so\n'),
               run('slurmd', 'slurmd: fatal: no version\n'),
               run('slurmd', fixture_text('slurm', 'slurmd-V-24.11.5.txt'))]
    assert version_problems(results, '24.11', '24.11', 'node03') == [
        'slurm_version on node03: slurmctld -V failed (rc 2): Error executing command. (no installed package ships '
        'slurmctld, or it cannot start; slurm_packages names the packages of each part)',
        'slurm_version on node03: slurmdbd -V failed (rc 127): slurmdbd: error while loading shared libraries: '
        'libslurmfull.so (no installed package ships slurmdbd, or it cannot start; slurm_packages names the packages '
        'of each part)',
        "slurm_version on node03: slurmd -V: 'slurmd: fatal: no version' is not a Slurm version line (<package> "
        '<major>.<minor>[.<micro>], e.g. slurm 24.11.5)']


def test_a_planned_version_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="None is not a Slurm version"):
        version_problems([], None, None, 'node01')
