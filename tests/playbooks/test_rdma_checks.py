# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rdma role on the controller: an OS it has no variables for, its input checks, its device check.

Each host is the controller under another OS's facts (the ``os_play`` fixture of conftest.py). The device check runs
the real ib_facts module on the recorded sysfs trees of tests/unit/fixtures/sysfs. What the role computes (the
packages per OS from its vars files, the rdma-core packages by build, the ports not Active, the DOCA-OFED repository
files) is unit-tested in tests/unit/plugins/module_utils/test_rdma_stack.py; the DOCA switch itself runs in the rdma
molecule scenario.
"""
from __future__ import annotations
import pytest

from checkout import ROOT

SYSFS = ROOT / 'tests' / 'unit' / 'fixtures' / 'sysfs'

SUPPORTED = ['debian12', 'debian13', 'ubuntu2204', 'ubuntu2404', 'rhel8', 'rhel9', 'rocky9']
DOCA_BASE = 'https://linux.mellanox.com/public/repo/doca/2.9.1'
DOCA_KEY = 'https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub'
# a site's own mirror on a private network, without TLS
MIRROR = 'http://mirror.cluster.internal/doca/2.9.1'

# the role's per-OS variables, loaded as the role loads them
LOAD = """    - name: Load the role's per-OS variables
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: set_vars.yml
        public: true
"""

# the role's checks that run before any change, then its device check
CHECKS = """    - name: Check the settings
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: assert.yml
        public: true

    - name: Find the devices
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: find_devices.yml
        public: true
      when: check_devices | default(false)

    - name: Check the devices and ports
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: devices.yml
        public: true
      when: check_devices | default(false)
"""


def on(*os_keys):
    """Hosts named after their OS, for os_play."""
    return {key: (key, {}) for key in os_keys}


def test_every_supported_os_has_its_variables(os_play):
    run = os_play(LOAD, on(*SUPPORTED))
    assert run.rc == 0, run.failed


def test_an_os_without_package_names_is_refused(os_play):
    arch = {'os_family': 'Archlinux', 'distribution': 'Archlinux', 'distribution_major_version': '2024'}
    run = os_play(LOAD, {'arch': ('debian12', {'facts': arch})})
    assert run.rc != 0
    assert len(run.failed) == 1
    assert 'role rdma does not support Archlinux 2024: it has variables for Debian, RedHat only' in run.failed[0]


GOOD_DOCA = {'rdma_stack': 'doca', 'rdma_doca_repo_url': DOCA_BASE + '/ubuntu24.04/x86_64/',
             'rdma_doca_repo_key_url': DOCA_KEY}


@pytest.mark.parametrize('settings, message', [
    ({'rdma_doca_repo_url': DOCA_BASE + '/ubuntu24.04/x86_64/'},
     'rdma_stack on ubuntu2404: rdma_doca_repo_url set but rdma_stack is inbox; the role installs one RDMA stack, never both'),
    ({'rdma_stack': 'doca'},
     "rdma_doca_repo_url on ubuntu2404: rdma_stack doca needs the DOCA-OFED repository of this OS and architecture"),
    (dict(GOOD_DOCA, rdma_doca_repo_url='linux.mellanox.com/public/repo/doca/'),
     "rdma_doca_repo_url on ubuntu2404: 'linux.mellanox.com/public/repo/doca/' is not an https:// URL with a host"),
    (dict(GOOD_DOCA, rdma_doca_repo_url=MIRROR + '/'),
     "rdma_doca_repo_url on ubuntu2404: '%s/' is plain HTTP: what it serves could be replaced on the way; use https://, "
     "or set rdma_allow_http: true" % MIRROR),
    (dict(GOOD_DOCA, rdma_doca_repo_key_url=MIRROR + '/GPG-KEY-Mellanox.pub'),
     "rdma_doca_repo_key_url on ubuntu2404: '%s/GPG-KEY-Mellanox.pub' is plain HTTP" % MIRROR),
    (dict(GOOD_DOCA, rdma_doca_repo_url=DOCA_BASE + '/ubuntu24.04/x86_64/\ndeb [trusted=yes] http://evil/ ./'),
     "rdma_doca_repo_url on ubuntu2404: '%s/ubuntu24.04/x86_64/\\ndeb [trusted=yes] http://evil/ ./' holds a blank, quote"
     % DOCA_BASE),
    (dict(GOOD_DOCA, rdma_doca_repo_url='https://mirror:s3cret@mirror.example.com/doca/'),
     "rdma_doca_repo_url on ubuntu2404: 'https://***@mirror.example.com/doca/' holds credentials"),
    (dict(GOOD_DOCA, rdma_doca_repo_key_url=None),
     'rdma_doca_repo_key_url on ubuntu2404: the repository needs its signing key from exactly one of '
     'rdma_doca_repo_key_url and rdma_doca_repo_key_src'),
    (dict(GOOD_DOCA, rdma_doca_repo_key_src='/srv/GPG-KEY-Mellanox.pub'),
     'rdma_doca_repo_key_url on ubuntu2404: the repository needs its signing key from exactly one of '
     'rdma_doca_repo_key_url and rdma_doca_repo_key_src'),
    (dict(GOOD_DOCA, rdma_doca_repo_key_url='GPG-KEY-Mellanox.pub'),
     "rdma_doca_repo_key_url on ubuntu2404: 'GPG-KEY-Mellanox.pub' is not an https:// URL"),
    (dict(GOOD_DOCA, rdma_doca_packages=[]), 'rdma_doca_packages on ubuntu2404: is empty'),
    ({'rdma_roce_modules': ['ib_umad', 'rdma_ucm; rm -rf /']},
     "rdma_roce_modules[1] on ubuntu2404: 'rdma_ucm; rm -rf /' is not a kernel module name"),
], ids=['doca-repo-with-inbox', 'doca-without-repo', 'repo-not-a-url', 'repo-plain-http', 'key-plain-http',
        'repo-with-a-second-line', 'repo-with-credentials', 'no-key', 'two-keys', 'key-not-a-url', 'no-doca-packages',
        'bad-module-name'])
def test_bad_settings_are_refused_naming_variable_and_host(os_play, settings, message):
    run = os_play(CHECKS, on('ubuntu2404'), **settings)
    assert run.rc != 0
    assert any(message in msg for msg in run.failed), run.failed
    # a password in a URL is refused without being repeated
    assert not [msg for msg in run.failed + run.said if 's3cret' in msg]


def test_good_doca_settings_pass(os_play):
    run = os_play(CHECKS, on('ubuntu2404'), **GOOD_DOCA)
    assert run.rc == 0, run.failed


def test_a_plain_http_mirror_passes_with_rdma_allow_http_and_a_local_one_without(os_play):
    run = os_play(CHECKS, on('ubuntu2404'), rdma_stack='doca', rdma_doca_repo_url=MIRROR + '/ubuntu24.04/x86_64/',
                  rdma_doca_repo_key_url=MIRROR + '/GPG-KEY-Mellanox.pub', rdma_allow_http=True)
    assert run.rc == 0, run.failed
    run = os_play(CHECKS, on('ubuntu2404'), rdma_stack='doca', rdma_doca_repo_url='file:///srv/mirror/doca/',
                  rdma_doca_repo_key_url='file:///srv/mirror/doca/GPG-KEY-Mellanox.pub')
    assert run.rc == 0, run.failed


def test_ports_not_active_are_named_with_host_device_port_and_state(os_play):
    run = os_play(CHECKS, on('rhel9'), check_devices=True, rdma_sysfs_root=str(SYSFS / 'ib_mixed'),
                  rdma_expect_active_ports=True)
    assert run.rc != 0
    assert run.failed == ['rhel9: RDMA ports not Active: mlx5_10 port 1 is Down (physical state Polling)']


def test_active_ports_pass_and_are_reported(os_play):
    run = os_play(CHECKS, on('rhel9'), check_devices=True, rdma_sysfs_root=str(SYSFS / 'roce_gid7_pod'),
                  rdma_expect_active_ports=True)
    assert run.rc == 0, run.failed
    assert 'rhel9: 2 RDMA device(s) (mlx5_0, mlx5_1), 2 Active port(s), link layers Ethernet' in run.said


def test_inactive_ports_pass_unless_asked_for(os_play):
    run = os_play(CHECKS, on('rhel9'), check_devices=True, rdma_sysfs_root=str(SYSFS / 'ib_mixed'))
    assert run.rc == 0, run.failed
    assert 'rhel9: 3 RDMA device(s) (mlx5_0, mlx5_10, mlx5_2), 2 Active port(s), link layers Ethernet, InfiniBand' \
        in run.said


def test_no_device_fails_where_devices_are_expected(os_play, tmp_path):
    (tmp_path / 'sys' / 'class' / 'infiniband').mkdir(parents=True)
    run = os_play(CHECKS, on('debian12'), check_devices=True, rdma_sysfs_root=str(tmp_path / 'sys'))
    assert run.rc != 0
    assert run.failed[0].startswith('debian12: no RDMA device found (%s/sys/class/infiniband is empty) but '
                                    'rdma_expect_devices is true' % tmp_path)


def test_no_device_is_said_where_none_is_expected(os_play, tmp_path):
    run = os_play(CHECKS, on('debian12'), check_devices=True, rdma_sysfs_root=str(tmp_path / 'nosys'),
                  rdma_expect_devices=False)
    assert run.rc == 0, run.failed
    assert ('no RDMA device on debian12: %s/nosys/class/infiniband does not exist; rdma_expect_devices is false, '
            'so the device and port checks did not run' % tmp_path) in run.said
