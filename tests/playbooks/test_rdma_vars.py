"""The rdma role on the controller: per-OS package names and DOCA-OFED repository settings, input checks, device check.

Each OS is a local host whose distribution facts sit in the inventory (``os_facts``). The play's first task makes them
real facts with ``ansible.builtin.set_fact`` and ``cacheable: true``, which stores them in the fact cache, where
``ansible_facts`` is read from, just as ``setup`` would. The role's own OS dispatch (first_found over vars/) then runs
unchanged for Debian 12, Ubuntu 22.04 and 24.04 and RHEL 8 and 9 without those machines, and its "gather when
os_family is missing" step is skipped. The device check runs the real ib_facts module on the recorded sysfs trees of
tests/unit/fixtures/sysfs.
"""
import json
import os
import subprocess
import sys
from collections import namedtuple

import pytest
import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT

SYSFS = ROOT / 'tests' / 'unit' / 'fixtures' / 'sysfs'

OSES = {
    'debian12': {'distribution': 'Debian', 'distribution_major_version': '12', 'distribution_version': '12.7',
                 'distribution_release': 'bookworm', 'os_family': 'Debian', 'pkg_mgr': 'apt'},
    'ubuntu2204': {'distribution': 'Ubuntu', 'distribution_major_version': '22', 'distribution_version': '22.04',
                   'distribution_release': 'jammy', 'os_family': 'Debian', 'pkg_mgr': 'apt'},
    'ubuntu2404': {'distribution': 'Ubuntu', 'distribution_major_version': '24', 'distribution_version': '24.04',
                   'distribution_release': 'noble', 'os_family': 'Debian', 'pkg_mgr': 'apt'},
    'rhel8': {'distribution': 'RedHat', 'distribution_major_version': '8', 'distribution_version': '8.10',
              'distribution_release': 'Ootpa', 'os_family': 'RedHat', 'pkg_mgr': 'dnf'},
    'rhel9': {'distribution': 'RedHat', 'distribution_major_version': '9', 'distribution_version': '9.4',
              'distribution_release': 'Plow', 'os_family': 'RedHat', 'pkg_mgr': 'dnf'},
}
# repository directories shaped like NVIDIA's (https://linux.mellanox.com/public/repo/doca/<release>/<os>/<arch>/);
# the role takes the URL it is given and computes none
DOCA_OS = {'debian12': 'debian12', 'ubuntu2204': 'ubuntu22.04', 'ubuntu2404': 'ubuntu24.04',
           'rhel8': 'rhel8.6', 'rhel9': 'rhel9.2'}
DOCA_BASE = 'https://linux.mellanox.com/public/repo/doca/2.9.1'
DOCA_KEY = 'https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub'

# the first task of every play below: this host's OS facts from the inventory made real facts
OS_FACTS_TASK = """    - name: Make this host's OS facts from the inventory real facts, as setup would report them
      ansible.builtin.set_fact:
        distribution: "{{ os_facts.distribution }}"
        distribution_major_version: "{{ os_facts.distribution_major_version }}"
        distribution_version: "{{ os_facts.distribution_version }}"
        distribution_release: "{{ os_facts.distribution_release }}"
        os_family: "{{ os_facts.os_family }}"
        pkg_mgr: "{{ os_facts.pkg_mgr }}"
        cacheable: true
"""

# one ansible-playbook run: rc, messages of failed tasks, messages of the others, what COMPUTE wrote per host
Run = namedtuple('Run', 'rc failed said computed')

# writes what the role computed for each host to OUT/<host>.json
COMPUTE = """
- name: Compute the rdma role's variables for each OS
  hosts: all
  gather_facts: false
  tasks:
""" + OS_FACTS_TASK + """
    - name: Load the role's OS dispatch
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: os_vars.yml
        public: true

    - name: Write what the role computed
      ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        content: "{{ computed | to_json }}"
        mode: "0644"
      delegate_to: localhost
      vars:
        computed:
          packages: "{{ __rdma_packages }}"
          core_packages: "{{ __rdma_core_packages }}"
          repo_kind: "{{ __rdma_repo_kind }}"
          key_path: "{{ __rdma_doca_key_path }}"
          files: "{{ __rdma_doca_files[__rdma_repo_kind] }}"
          apt_source: "{{ __rdma_doca_apt_source if __rdma_repo_kind == 'apt' else none }}"
          apt_pin: "{{ __rdma_doca_apt_pin if __rdma_repo_kind == 'apt' else none }}"
          dnf_repo: "{{ __rdma_doca_dnf_repo if __rdma_repo_kind == 'dnf' else none }}"
"""

# the role's checks that run before any change, then its device check
CHECKS = """
- name: Run the rdma role's checks
  hosts: all
  gather_facts: false
  tasks:
""" + OS_FACTS_TASK + """
    - name: Check the settings
      ansible.builtin.include_role:
        name: hpcfabric.cluster.rdma
        tasks_from: validate.yml
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


@pytest.fixture
def lab(tmp_path):
    """An inventory of one local host per OS with its facts; ``run(playbook, limit, **extra_vars)`` gives a Run."""
    hosts = {host: {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'os_facts': facts}
             for host, facts in OSES.items()}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': hosts}}))
    out = tmp_path / 'out'
    out.mkdir()

    def run(playbook, limit, **extra_vars):
        (tmp_path / 'play.yml').write_text(playbook)
        # the JSON report only: ansible.cfg's profile_tasks would print into it
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACKS_ENABLED='ansible.posix.json')
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, '-i', str(tmp_path / 'hosts.yml'), '-l', limit, str(tmp_path / 'play.yml'),
             '-e', json.dumps(dict(extra_vars, out=str(out)))],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            pytest.fail('ansible-playbook printed no JSON report (rc %d): %s' % (proc.returncode, proc.stderr))
        failed, said = [], []
        for play in report['plays']:
            for task in play['tasks']:
                for result in task['hosts'].values():
                    (failed if result.get('failed') else said).append(result.get('msg', ''))
        return Run(proc.returncode, failed, said, {p.stem: json.loads(p.read_text()) for p in out.glob('*.json')})

    return run


def test_inbox_packages_per_os(lab):
    run = lab(COMPUTE, 'all')
    assert run.rc == 0, run.failed
    deb = ['rdma-core', 'ibverbs-providers', 'ibverbs-utils', 'rdmacm-utils', 'infiniband-diags', 'perftest']
    rpm = ['rdma-core', 'libibverbs-utils', 'librdmacm-utils', 'infiniband-diags', 'perftest']
    assert {host: c['packages'] for host, c in run.computed.items()} == {
        'debian12': deb, 'ubuntu2204': deb, 'ubuntu2404': deb, 'rhel8': rpm, 'rhel9': rpm}
    assert {host: c['repo_kind'] for host, c in run.computed.items()} == {
        'debian12': 'apt', 'ubuntu2204': 'apt', 'ubuntu2404': 'apt', 'rhel8': 'dnf', 'rhel9': 'dnf'}
    # the one-stack check knows the libraries Ubuntu 24.04 renamed for 64-bit time_t, and the RPM names
    for host in ('debian12', 'ubuntu2204', 'ubuntu2404'):
        assert {'libibverbs1', 'librdmacm1', 'librdmacm1t64', 'libibnetdisc5', 'libibnetdisc5t64',
                'ibverbs-providers'} <= set(run.computed[host]['core_packages'])
    for host in ('rhel8', 'rhel9'):
        assert {'rdma-core', 'libibverbs', 'librdmacm', 'libibumad', 'infiniband-diags', 'srp_daemon'} \
            <= set(run.computed[host]['core_packages'])
        assert 'libibverbs1' not in run.computed[host]['core_packages']


@pytest.mark.parametrize('host', sorted(OSES))
def test_doca_repository_per_os(lab, host):
    url = '%s/%s/x86_64/' % (DOCA_BASE, DOCA_OS[host])
    run = lab(COMPUTE, host, rdma_stack='doca', rdma_doca_repo_url=url, rdma_doca_repo_key_url=DOCA_KEY,
              rdma_packages_extra=['mstflint'])
    assert run.rc == 0, run.failed
    c = run.computed[host]
    assert c['packages'] == ['doca-ofed', 'mstflint']
    if OSES[host]['os_family'] == 'Debian':
        assert c['files'] == {'key': '/etc/apt/keyrings/hpcfabric-doca.asc',
                              'repo': '/etc/apt/sources.list.d/hpcfabric-doca.sources',
                              'pin': '/etc/apt/preferences.d/hpcfabric-doca.pref'}
        assert c['apt_source'] == {'Types': 'deb', 'URIs': url, 'Suites': './',
                                   'Signed-By': '/etc/apt/keyrings/hpcfabric-doca.asc'}
        assert c['apt_pin'] == {'origin': 'linux.mellanox.com', 'priority': 600}
        assert c['dnf_repo'] is None
    else:
        assert c['files'] == {'key': '/etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-doca',
                              'repo': '/etc/yum.repos.d/hpcfabric-doca.repo'}
        assert c['dnf_repo'] == {'name': 'hpcfabric-doca', 'description': 'NVIDIA DOCA-OFED', 'baseurl': url,
                                 'gpgcheck': True, 'gpgkey': 'file:///etc/pki/rpm-gpg/RPM-GPG-KEY-hpcfabric-doca',
                                 'priority': 10}
        assert c['apt_source'] is None


def test_doca_file_repository_pins_the_local_origin(lab):
    """apt's origin of a file: repository is the empty string."""
    run = lab(COMPUTE, 'ubuntu2404', rdma_stack='doca', rdma_doca_repo_url='file:///srv/doca/',
              rdma_doca_repo_key_src='/srv/doca/GPG-KEY-Mellanox.pub')
    assert run.rc == 0, run.failed
    assert run.computed['ubuntu2404']['apt_pin'] == {'origin': '', 'priority': 600}


GOOD_DOCA = {'rdma_stack': 'doca', 'rdma_doca_repo_url': DOCA_BASE + '/ubuntu24.04/x86_64/',
             'rdma_doca_repo_key_url': DOCA_KEY}


@pytest.mark.parametrize('settings, message', [
    ({'rdma_doca_repo_url': DOCA_BASE + '/ubuntu24.04/x86_64/'},
     'ubuntu2404: rdma_doca_repo_url set but rdma_stack is inbox; the role installs one RDMA stack, never both'),
    ({'rdma_stack': 'doca'},
     "ubuntu2404: rdma_stack doca needs rdma_doca_repo_url, the DOCA-OFED repository of this OS and architecture"),
    (dict(GOOD_DOCA, rdma_doca_repo_url='linux.mellanox.com/public/repo/doca/'),
     "ubuntu2404: rdma_stack doca needs rdma_doca_repo_url"),
    (dict(GOOD_DOCA, rdma_doca_repo_key_url=None),
     'ubuntu2404: rdma_doca_repo_url needs its signing key from exactly one of rdma_doca_repo_key_url and '
     'rdma_doca_repo_key_src'),
    (dict(GOOD_DOCA, rdma_doca_repo_key_src='/srv/GPG-KEY-Mellanox.pub'),
     'ubuntu2404: rdma_doca_repo_url needs its signing key from exactly one of rdma_doca_repo_key_url and '
     'rdma_doca_repo_key_src'),
    (dict(GOOD_DOCA, rdma_doca_repo_key_url='GPG-KEY-Mellanox.pub'),
     'ubuntu2404: rdma_doca_repo_key_url must be an http, https or file URL'),
    (dict(GOOD_DOCA, rdma_doca_packages=[]), 'ubuntu2404: rdma_doca_packages is empty'),
    ({'rdma_roce_modules': ['ib_umad', 'rdma_ucm; rm -rf /']},
     "ubuntu2404: rdma_roce_modules must hold kernel module names only"),
], ids=['doca-repo-with-inbox', 'doca-without-repo', 'repo-not-a-url', 'no-key', 'two-keys', 'key-not-a-url',
        'no-doca-packages', 'bad-module-name'])
def test_bad_settings_are_refused_naming_variable_and_host(lab, settings, message):
    run = lab(CHECKS, 'ubuntu2404', **settings)
    assert run.rc != 0
    assert any(message in msg for msg in run.failed), run.failed


def test_good_doca_settings_pass(lab):
    run = lab(CHECKS, 'ubuntu2404', **GOOD_DOCA)
    assert run.rc == 0, run.failed


def test_ports_not_active_are_named_with_host_device_port_and_state(lab):
    run = lab(CHECKS, 'rhel9', check_devices=True, rdma_sysfs_root=str(SYSFS / 'ib_mixed'),
              rdma_expect_active_ports=True)
    assert run.rc != 0
    assert run.failed == ['rhel9: RDMA ports not Active: mlx5_10 port 1 is Down (physical state Polling)']


def test_active_ports_pass_and_are_reported(lab):
    run = lab(CHECKS, 'rhel9', check_devices=True, rdma_sysfs_root=str(SYSFS / 'roce_gid7_pod'),
              rdma_expect_active_ports=True)
    assert run.rc == 0, run.failed
    assert 'rhel9: 2 RDMA device(s) (mlx5_0, mlx5_1), 2 Active port(s), link layers Ethernet' in run.said


def test_inactive_ports_pass_unless_asked_for(lab):
    run = lab(CHECKS, 'rhel9', check_devices=True, rdma_sysfs_root=str(SYSFS / 'ib_mixed'))
    assert run.rc == 0, run.failed
    assert 'rhel9: 3 RDMA device(s) (mlx5_0, mlx5_10, mlx5_2), 2 Active port(s), link layers Ethernet, InfiniBand' \
        in run.said


def test_no_device_fails_where_devices_are_expected(lab, tmp_path):
    (tmp_path / 'sys' / 'class' / 'infiniband').mkdir(parents=True)
    run = lab(CHECKS, 'debian12', check_devices=True, rdma_sysfs_root=str(tmp_path / 'sys'))
    assert run.rc != 0
    assert run.failed[0].startswith('debian12: no RDMA device found (%s/sys/class/infiniband is empty) but '
                                    'rdma_expect_devices is true' % tmp_path)


def test_no_device_is_said_where_none_is_expected(lab, tmp_path):
    run = lab(CHECKS, 'debian12', check_devices=True, rdma_sysfs_root=str(tmp_path / 'nosys'),
              rdma_expect_devices=False)
    assert run.rc == 0, run.failed
    assert ('no RDMA device on debian12: %s/nosys/class/infiniband does not exist; rdma_expect_devices is false, '
            'so the device and port checks did not run' % tmp_path) in run.said
