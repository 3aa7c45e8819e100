# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's per-OS variables and mount checks, and fabric_network's interface check, on the controller.

Each host is the controller under another OS's facts (the ``os_play`` fixture of conftest.py). The mount checks and
the interface resolution are unit-tested in tests/unit/plugins/module_utils (test_storage_mounts.py,
test_fabric_links.py); here the roles' tasks show they call them and name the host. fabric_network's check reads
the controller's own links: every Linux host has ``lo``, and the resolution by MAC takes the controller's first link
with a unicast MAC (``lo``'s all-zero one is refused as no NIC's).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest


def unicast_link():
    """(name, MAC) of one of this machine's links that has a real, unicast MAC."""
    links = json.loads(subprocess.run(['ip', '-json', 'link', 'show'], capture_output=True, text=True, check=True).stdout)
    for link in links:
        mac = link.get('address', '')
        if link.get('link_type') == 'ether' and len(mac) == 17 and not int(mac[:2], 16) & 1 and mac.strip('0:'):
            return link['ifname'], mac
    pytest.skip('this machine has no Ethernet link with a unicast MAC to resolve')
    return None


STORAGE = """    - name: Load the storage role's variables and check the mounts
      ansible.builtin.include_role:
        name: hpcfabric.cluster.storage
        tasks_from: "{{ item }}"
        public: true
      loop: [set_vars.yml, assert.yml]

    - name: Write what the role mounts
      ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        content: "{{ {'packages': __storage_nfs_packages, 'mounts': __storage_mounts} | to_json }}"
        mode: "0644"
      delegate_to: localhost
"""

FABRIC = """    - name: Check this host's fabric interfaces
      ansible.builtin.include_role:
        name: hpcfabric.cluster.fabric_network
        tasks_from: assert.yml
        public: true

    - name: Write the interfaces the role would configure
      ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        content: "{{ __fabric_network_resolved | to_json }}"
        mode: "0644"
      delegate_to: localhost
"""

NFS = {'src': 'nfs01.example.com:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs'}
RAILS = [{'name': 'rail0', 'subnet': '10.100.0.0/24'}, {'name': 'rail1', 'subnet': '10.100.1.0/24'}]


@pytest.mark.parametrize('os_key, packages', [
    ('debian12', ['nfs-common']), ('ubuntu2404', ['nfs-common']), ('rhel9', ['nfs-utils']), ('rocky9', ['nfs-utils'])])
def test_nfs_client_packages_per_os_and_mount_options(os_play, os_key, packages):
    run = os_play(STORAGE, {os_key: (os_key, {'storage_mounts': [dict(NFS, automount=True)]})})
    assert run.rc == 0, run.failed
    assert run.out[os_key] == {'packages': packages, 'mounts': [dict(
        NFS, automount=True, opts='nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail,x-systemd.automount',
        state='mounted')]}


def test_storage_refuses_an_os_without_package_names(os_play):
    arch = {'os_family': 'Archlinux', 'distribution': 'Archlinux', 'distribution_major_version': '2024'}
    run = os_play(STORAGE, {'arch': ('debian12', {'facts': arch, 'storage_mounts': [NFS]})})
    assert run.rc != 0
    assert len(run.failed) == 1
    assert 'role storage does not support Archlinux 2024: it has variables for Debian, RedHat only' in run.failed[0]


def test_bad_mounts_are_refused_naming_host_and_entries(os_play):
    mounts = [dict(NFS, path='data'), dict(NFS, path='/data/b', src='nfs01:/export\n/dev/sda1 / ext4 defaults 0 0'),
              {'src': '10.0.0.1@o2ib0:/scratch', 'path': '/lustre', 'fstype': 'lustre'}]
    run = os_play(STORAGE, {'node01': ('debian12', {'storage_mounts': mounts})})
    assert run.rc != 0
    assert run.failed == [
        'storage_mounts on node01: [0].path data is not an absolute mount point; '
        'storage_mounts on node01: [1].src "nfs01:/export\\n/dev/sda1 / ext4 defaults 0 0" holds whitespace, a control '
        'character or #, which /etc/fstab cannot carry; storage_mounts on node01: a Lustre mount is listed but '
        'storage_lustre_packages is empty (Lustre clients come from the site repository); storage_mounts on node01: [2] '
        'is a Lustre mount but storage_lnet_networks is empty (the client needs the LNet network its servers are on, '
        'e.g. o2ib0(ib0))']


# each host of one play breaks one rule; every message names the host and the variable or entry
INPUT_CASES = {
    'badsrc': ({'storage_mounts': [dict(NFS, src='nfs01.example.com/export')]},
               'storage_mounts on badsrc: [0].src nfs01.example.com/export is not server:/export'),
    'badnid': ({'storage_mounts': [dict(NFS, fstype='lustre', src='mgs@o2ib0/scratch')],
                'storage_lustre_packages': ['lustre-client-utils'], 'storage_lnet_networks': ['o2ib0(ib0)']},
               'storage_mounts on badnid: [0].src mgs@o2ib0/scratch is not nid@net:/fsname'),
    'twice': ({'storage_mounts': [NFS, dict(NFS, path='/data/datasets/')]},
              'storage_mounts on twice: [0].path /data/datasets is listed more than once; '
              'storage_mounts on twice: [1].path /data/datasets/ is listed more than once'),
    'cifs': ({'storage_mounts': [dict(NFS, fstype='cifs')]},
             'storage_mounts on cifs: [0].fstype "cifs" is not one of nfs, nfs4, lustre'),
    'nolnet': ({'storage_mounts': [{'src': '10.0.0.1@o2ib0:/scratch', 'path': '/lustre', 'fstype': 'lustre'}],
                'storage_lustre_packages': ['lustre-client-utils']},
               'storage_mounts on nolnet: [0] is a Lustre mount but storage_lnet_networks is empty (the client needs '
               'the LNet network its servers are on, e.g. o2ib0(ib0))'),
    'othernet': ({'storage_mounts': [{'src': '10.0.0.1@o2ib0:/scratch', 'path': '/lustre', 'fstype': 'lustre'}],
                  'storage_lustre_packages': ['lustre-client-utils'], 'storage_lnet_networks': ['tcp0(eth0)'],
                  'storage_lnet_ping_nids': ['10.0.0.1@o2ib0']},
                 'storage_mounts on othernet: [0].src 10.0.0.1@o2ib0:/scratch: its MGS is on o2ib, which '
                 'storage_lnet_networks does not configure (tcp); storage_mounts on othernet: storage_lnet_ping_nids[0] '
                 '10.0.0.1@o2ib0 is on o2ib, which storage_lnet_networks does not configure'),
    'lnetspec': ({'storage_lnet_networks': ['o2ib0(ib0)"\ninstall lnet /bin/sh']},
                 "storage_lnet_networks[0] on lnetspec: 'o2ib0(ib0)\"\\ninstall lnet /bin/sh' is not an LNet "
                 "network"),
}


def test_each_input_check_names_the_variable_and_host(os_play):
    run = os_play(STORAGE, {host: ('debian12', variables) for host, (variables, _message) in INPUT_CASES.items()})
    assert run.rc != 0
    assert len(run.failed) == len(INPUT_CASES)
    for host, (_variables, message) in INPUT_CASES.items():
        assert [failure for failure in run.failed if failure.startswith(message)], (host, run.failed)


def test_fabric_interfaces_resolve_by_mac_and_take_the_default_mtu(os_play):
    name, mac = unicast_link()
    interfaces = [{'mac': mac.upper(), 'address': '10.100.0.11/24', 'rail': 0},
                  {'name': 'lo', 'address': '10.100.1.11/24', 'rail': 1, 'mtu': 4200}]
    run = os_play(FABRIC, {'node01': ('debian12', {'fabric_network_interfaces': interfaces})},
                  cluster_model_group='all', fabric_network_rails=RAILS)
    assert run.rc == 0, run.failed
    assert run.out['node01'] == [
        {'mac': mac.upper(), 'address': '10.100.0.11/24', 'rail': 0, 'name': name, 'mtu': 9000, 'routes': []},
        {'name': 'lo', 'address': '10.100.1.11/24', 'rail': 1, 'mtu': 4200, 'routes': []}]


def test_missing_fabric_interfaces_are_named_with_the_host(os_play):
    interfaces = [{'name': 'nosuch0', 'address': '10.100.0.11/24', 'rail': 0},
                  {'mac': '0c:42:a1:00:00:01', 'address': '10.100.1.11/24', 'rail': 1}]
    run = os_play(FABRIC, {'node01': ('debian12', {'fabric_network_interfaces': interfaces})},
                  cluster_model_group='all', fabric_network_rails=RAILS)
    assert run.rc != 0
    assert len(run.failed) == 1
    assert run.failed[0].startswith(
        'fabric_network_interfaces on node01: no such interface nosuch0, 0c:42:a1:00:00:01 (this host has lo, ')


MOUNT_FACTS = """    - name: Read the recorded /proc/mounts with ansible's own module, as the role reads the live one
      ansible.builtin.mount_facts:
        sources: ["{{ proc_mounts }}"]
        fstypes: [nfs, nfs4, lustre, autofs]
        include_aggregate_mounts: false
        timeout: 5

    - name: Compare the plan with them
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ plan | hpcfabric.cluster.storage_readback_problems(clean, ansible_facts['mount_points']) | to_json }}"
        mode: "0644"
"""


def test_the_live_mount_read_back_reads_what_mount_facts_returns(local_play, tmp_path):
    fixtures = Path(__file__).resolve().parents[1] / 'unit' / 'fixtures' / 'storage'
    plan = [dict(NFS, opts='nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail', state='mounted'),
            {'src': '10.10.5.1@o2ib0:10.10.5.2@o2ib0:/scratch', 'path': '/lustre/scratch', 'fstype': 'lustre',
             'opts': 'flock,noatime,_netdev,nofail', 'state': 'mounted'},
            {'src': 'nfs01.example.com:/export/ckpt', 'path': '/data/checkpoints', 'fstype': 'nfs', 'automount': True,
             'opts': 'nfsvers=4.1,_netdev,nofail,x-systemd.automount', 'state': 'mounted'},
            dict(NFS, path='/data/other', opts='nconnect=8', state='mounted')]
    rc, output = local_play('node01', MOUNT_FACTS, '-e', json.dumps({
        'proc_mounts': str(fixtures / 'proc_mounts.txt'), 'out': str(tmp_path / 'problems.json'), 'plan': plan,
        'clean': [(fixtures / 'findmnt_verify_clean.txt').read_text(), '']}))
    assert rc == 0, output
    # only the mount that is not there; the others hold the plan as the kernel shows it
    assert json.loads((tmp_path / 'problems.json').read_text()) == ['/data/other is not mounted']
