# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The slurm role's input rules (module_utils/role_settings/slurm.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import role_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings.slurm import problems

DEFAULTS = {'slurm_controller_group': 'slurm_controllers', 'slurm_compute_group': 'gpu_nodes',
            'slurm_cluster_name': 'cluster', 'slurm_version': None, 'slurm_partitions': [{'name': 'gpu', 'default': True}],
            'slurm_topology_leaves': [], 'slurm_topology_spine': 'spine', 'slurm_gres_autodetect': False,
            'slurm_conf_extra': {}, 'slurm_memory_reserved_mb': 1024, 'slurm_munge_key_dir': None,
            'slurm_repo_url': None, 'slurm_repo_suite': './', 'slurm_repo_components': [], 'slurm_repo_key_url': None,
            'slurm_repo_key_src': None, 'slurm_packages': None}


def test_the_defaults_pass():
    assert problems(DEFAULTS) == []
    assert problems({}) == []


@pytest.mark.parametrize('change, expected', [
    ({'slurm_compute_group': 'gpu nodes'}, [('slurm_compute_group', "'gpu nodes' is not an inventory group name")]),
    ({'slurm_cluster_name': 'B300'}, [('slurm_cluster_name', "'B300' is not a cluster name (lower-case letters, digits, "
                                       '_ and -, at most 40, starting with a letter)')]),
    ({'slurm_version': '22'}, [('slurm_version', "'22' is not a Slurm version (major.minor, e.g. 22.05)")]),
    ({'slurm_version': '23.11', 'slurm_gres_autodetect': True},
     [('slurm_gres_autodetect', 'AutoDetect=nvidia needs Slurm 24.11 or later, slurm_version is 23.11')]),
    ({'slurm_partitions': [{'name': 'gpu'}, {'name': 'gpu', 'nodes': 'node[1-'}]},
     [('slurm_partitions[1]', 'partition gpu is named twice'),
      ('slurm_partitions[1].nodes', "'node[1-': \"[\" without \"]\"")]),
    ({'slurm_partitions': [{'name': 'gpu', 'max_time': '2 days', 'options': {'Nodes': 'x', 'OverSubscribe': 'NO x'}}]},
     [('slurm_partitions[0].max_time', "'2 days' is not a Slurm time (INFINITE, minutes, h:m:s or d-h:m:s)"),
      ('slurm_partitions[0].options', "'Nodes' is not a partition setting the role leaves to you"),
      ('slurm_partitions[0].options.OverSubscribe', "'NO x' is not one slurm.conf word (no blank, line break or #)")]),
    ({'slurm_topology_leaves': [{'name': 'leaf 1', 'nodes': 'node[2-1]'}]},
     [('slurm_topology_leaves[0].name', "'leaf 1' is not a host name label (letters, digits and inner hyphens, 1-63 "
       'characters)'), ('slurm_topology_leaves[0].nodes', "'node[2-1]': the range 2-1 runs backwards")]),
    ({'slurm_conf_extra': {'mpidefault': 'none', 'SlurmctldDebug': 'info\nSlurmUser=root'}},
     [('slurm_conf_extra', 'MpiDefault is written by the role (from the cluster model and its variables); a second '
       'line would contradict it'),
      ('slurm_conf_extra.SlurmctldDebug', "'info\\nSlurmUser=root' is not one slurm.conf word (no blank, line break "
       'or #)')]),
    ({'slurm_memory_reserved_mb': -1}, [('slurm_memory_reserved_mb', 'must be a whole number of MB, 0 or more, got -1')]),
    ({'slurm_munge_key_dir': '/tmp/munge'},
     [('slurm_munge_key_dir', "'/tmp/munge' is under a directory every user can write to, which no secret belongs in")]),
])
def test_a_broken_setting_is_named(change, expected):
    assert problems(dict(DEFAULTS, **change)) == expected


# --- accounting ---------------------------------------------------------------------------------------------------

ACCOUNTING = dict(DEFAULTS, slurm_accounting=True, slurm_accounting_db_password='Lab-only-0123456789',
                  slurm_accounting_db_name='slurm_acct_db', slurm_accounting_db_user='slurm')


def test_accounting_with_a_usable_password_passes():
    assert problems(ACCOUNTING) == []
    # off, no password is needed
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=None)) == []


def test_accounting_without_a_password_is_refused_naming_the_variable_and_the_host():
    for password in (None, ''):
        settings = dict(ACCOUNTING, slurm_accounting_db_password=password)
        assert role_problems('slurm', settings, 'node01') == [
            'slurm_accounting_db_password on node01: required while slurm_accounting is true: the password slurmdbd '
            'logs in to its MariaDB database with (keep it in Ansible Vault)']


@pytest.mark.parametrize('password', ['short-pw-1', 'with blank 0123456', 'hash#0123456789', "quote'0123456789",
                                      'back\\slash0123456', 'line\nbreak0123456', 'dq"0123456789ab'])
def test_a_password_slurmdbd_conf_cannot_carry_is_refused_and_never_quoted(password):
    found = problems(dict(ACCOUNTING, slurm_accounting_db_password=password))
    assert [label for label, _message in found] == ['slurm_accounting_db_password']
    assert password not in found[0][1] and repr(password) not in found[0][1]
    # given while accounting is off, it is checked all the same
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=password)) == found


@pytest.mark.parametrize('change, expected', [
    ({'slurm_accounting': 'yes'}, [('slurm_accounting', "must be true or false, got 'yes'")]),
    ({'slurm_accounting_db_name': 'slurm-acct'},
     [('slurm_accounting_db_name', "'slurm-acct' is not a MariaDB name of letters, digits and _, at most 64 "
       'characters')]),
    ({'slurm_accounting_db_user': 'u' * 33},
     [('slurm_accounting_db_user', "'%s' is not a MariaDB name of letters, digits and _, at most 32 characters"
       % ('u' * 33))]),
])
def test_broken_accounting_settings_are_named(change, expected):
    assert problems(dict(ACCOUNTING, **change)) == expected


def test_the_accounting_lines_are_the_roles_while_accounting_is_on():
    extra = {'AccountingStorageType': 'accounting_storage/slurmdbd', 'AccountingStorageHost': 'dbd01'}
    # a site's own slurmdbd elsewhere, while the role's accounting is off
    assert problems(dict(ACCOUNTING, slurm_accounting=False, slurm_accounting_db_password=None,
                         slurm_conf_extra=extra)) == []
    assert problems(dict(ACCOUNTING, slurm_conf_extra=dict(extra, AccountingStorageTRES='gres/gpu'))) == [
        ('slurm_conf_extra', '%s is written by the role (from the cluster model and its variables); a second line '
         'would contradict it' % key) for key in ('AccountingStorageType', 'AccountingStorageHost')]


# --- site repository and package names ----------------------------------------------------------------------------

# what a molecule scenario sets for a flat repository on the lab's host, its key a file on the controller
# the lab's: the gateway serves it without TLS
SITE = dict(DEFAULTS, slurm_version='22.05', slurm_repo_url='http://10.77.12.1:8080/', slurm_allow_http=True,
            slurm_repo_key_src='/work/lab/slurm-repo/key.asc')
SMD = {'controller': ['slurm-smd-slurmctld', 'slurm-smd-client'], 'compute': ['slurm-smd-slurmd', 'slurm-smd-client'],
       'accounting': ['slurm-smd-slurmdbd']}
VERSION_REQUIRED = ('slurm_version', "required with slurm_repo_url or slurm_packages: the role plans slurm.conf for the "
                    "Slurm the packages install and checks it after the install, and the distribution's version would "
                    "not be that one (e.g. slurm_version: '23.11')")
ONE_KEY = ('the site repository needs its signing key from exactly one of slurm_repo_key_url and slurm_repo_key_src '
           '(got url %r, src %r); the role adds no unsigned repository')


@pytest.mark.parametrize('change', [
    {},
    {'slurm_repo_url': 'https://repo.example.com/slurm/'},
    # plain http with slurm_allow_http (SITE's), as the other roles' URLs
    {'slurm_repo_key_src': None, 'slurm_repo_key_url': 'http://10.77.12.1:8080/key.asc'},
    {'slurm_repo_url': 'file:///srv/slurm/'},
    {'slurm_repo_key_src': None, 'slurm_repo_key_url': 'https://repo.example.com/slurm/key.asc'},
    {'slurm_repo_key_src': None, 'slurm_repo_key_url': 'file:///srv/slurm/key.asc'},
    {'slurm_repo_suite': 'bookworm', 'slurm_repo_components': ['main']},
    {'slurm_packages': SMD, 'slurm_version': '23.11'},
    # a part left out (or null) keeps the distribution's names
    {'slurm_packages': {'compute': ['slurm-smd-slurmd', 'slurm-smd-client'], 'controller': None}},
])
def test_a_site_repository_with_one_key_and_a_version_passes(change):
    assert problems(dict(SITE, **change)) == []


def test_the_site_s_packages_without_a_repository_of_the_role_s_pass_with_a_version():
    # the host's own sources (an image's, another role's) may serve them
    assert problems(dict(DEFAULTS, slurm_packages=SMD, slurm_version='23.11')) == []


@pytest.mark.parametrize('change, expected', [
    ({'slurm_version': None}, [VERSION_REQUIRED]),
    ({'slurm_repo_url': 'ftp://repo.example.com/slurm/'},
     [('slurm_repo_url', "'ftp://repo.example.com/slurm/' is not an http:// or https:// URL with a host, nor a file: "
       'URL of a path on the node')]),
    ({'slurm_repo_url': 'http://10.77.12.1:8080/ ./\nTypes: deb'},
     [('slurm_repo_url', "'http://10.77.12.1:8080/ ./\\nTypes: deb' holds a blank, quote, backslash, backtick, <, >, "
       '{, }, |, ^, control or non-ASCII character')]),
    ({'slurm_repo_url': 'https://user:secret@repo.example.com/slurm/'},
     [('slurm_repo_url', "'https://***@repo.example.com/slurm/' holds credentials (user@ before the host), which would "
       'be logged and written to files with the URL; give the mirror access another way (a client certificate, a '
       'proxy, an address allow-list)')]),
    ({'slurm_repo_key_src': None}, [('slurm_repo_key_url', ONE_KEY % ('', ''))]),
    ({'slurm_repo_key_url': 'https://repo.example.com/key.asc'},
     [('slurm_repo_key_url', ONE_KEY % ('https://repo.example.com/key.asc', '/work/lab/slurm-repo/key.asc'))]),
    # plain http only with slurm_allow_http: whoever replaced the key could sign packages of their own
    ({'slurm_repo_key_src': None, 'slurm_repo_key_url': 'http://10.77.12.1:8080/key.asc', 'slurm_repo_url':
      'https://10.77.12.1:8443/', 'slurm_allow_http': False},
     [('slurm_repo_key_url', "'http://10.77.12.1:8080/key.asc' is plain HTTP: what it serves could be replaced on the "
       'way; use https://, or set slurm_allow_http: true for a mirror on a private network without TLS')]),
    ({'slurm_repo_url': 'http://10.77.12.1:8080/', 'slurm_allow_http': False},
     [('slurm_repo_url', "'http://10.77.12.1:8080/' is plain HTTP: what it serves could be replaced on the way; use "
       'https://, or set slurm_allow_http: true for a mirror on a private network without TLS')]),
    ({'slurm_repo_components': ['main']},
     [('slurm_repo_components', 'must be empty for suite ./, a flat repository (its suite ends with /), got main')]),
    ({'slurm_repo_suite': 'bookworm'},
     [('slurm_repo_components', "is empty, but suite bookworm is a distribution under dists/, which needs its "
       "components (main, ...); a flat repository's suite ends with / (./)")]),
    ({'slurm_repo_suite': './ [trusted=yes]'},
     [('slurm_repo_suite', "'./ [trusted=yes]' is not an apt suite (a word such as stable, or a path ending in / such "
       'as ./ for a flat repository)')]),
    ({'slurm_packages': {'controller': ['slurm-smd-slurmctld=23.11.4-1', 'Slurmctld', 's'], 'login': ['sackd']}},
     [('slurm_packages.controller[0]', "'slurm-smd-slurmctld=23.11.4-1' is not a Debian package name (lower-case "
       'letters, digits, +, - and ., at least two, starting with a letter or digit)'),
      ('slurm_packages.controller[1]', "'Slurmctld' is not a Debian package name (lower-case letters, digits, +, - and "
       '., at least two, starting with a letter or digit)'),
      ('slurm_packages.controller[2]', "'s' is not a Debian package name (lower-case letters, digits, +, - and ., at "
       'least two, starting with a letter or digit)'),
      ('slurm_packages', "'login' is not a part of the role (controller, compute, accounting)")]),
    ({'slurm_packages': {'compute': []}},
     [('slurm_packages.compute', "must be a non-empty list of package names, got []; leave the part out for the "
       "distribution's")]),
    ({'slurm_packages': ['slurm-smd-slurmd']},
     [('slurm_packages', "must be a mapping of controller, compute, accounting to lists of package names, got "
       "['slurm-smd-slurmd']")]),
])
def test_a_broken_site_repository_setting_is_named(change, expected):
    assert problems(dict(SITE, **change)) == expected


def test_the_site_s_packages_need_the_version_they_install_too():
    assert problems(dict(DEFAULTS, slurm_packages=SMD)) == [VERSION_REQUIRED]


def test_a_key_without_a_repository_is_refused_naming_variable_and_host():
    assert role_problems('slurm', dict(DEFAULTS, slurm_repo_key_src='/work/lab/slurm-repo/key.asc'), 'node01') == [
        'slurm_repo_key_src on node01: set but slurm_repo_url is not: the key signs the site repository, which the '
        'role adds only with slurm_repo_url']
