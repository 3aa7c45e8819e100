# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""switch_qos against TEST stand-ins of the switches (tests/standins): an NVUE REST API on this machine (Cumulus)
and SONiC's ``show``, ``config`` and ``sonic-db-cli`` first on PATH, each keeping the state the role changes.

For each: apply, read back, a second run that changes nothing, a setting drifted behind the role's back named by
switch, port and setting, --check showing the differences and changing nothing, switch_qos_verify_only reading and
failing without a change. A switch's configuration holds its secrets (TACACS keys, SNMP communities), and the NVUE
requests its password: the run, at -vvv, must print neither, and a failure must still say what failed.
"""
from __future__ import annotations
import json
import os
import re
import subprocess
import sys

import pytest

from checkout import ROOT

sys.path.insert(0, str(ROOT / 'tests' / 'standins'))
from nvue import NvueStandin  # noqa: E402  pylint: disable=wrong-import-position

SECRET = 'tacacs-key-that-must-not-be-printed'
PASSWORD = 'nvue-password-that-must-not-be-printed'
SONIC_STANDIN = ROOT / 'tests' / 'standins' / 'sonic.py'


def changed(out, host='switch1'):
    """The changed count of ``host`` in the play recap."""
    match = re.search(r'^%s\s*:\s*ok=\d+\s+changed=(\d+)' % re.escape(host), out, re.MULTILINE)
    assert match, out
    return int(match.group(1))


# --- Cumulus: NVUE REST API --------------------------------------------------------------------------------------
@pytest.fixture
def nvue(tmp_path):
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=switch1',
                    '-keyout', str(key), '-out', str(cert)], check=True, capture_output=True)
    # a switch before the role: MTU 1500 on its ports, no RoCE QoS, a secret elsewhere in its configuration
    switch = NvueStandin({'interface': {'swp1': {'link': {'mtu': 1500}}, 'swp2': {'link': {'mtu': 1500}},
                                        'eth0': {'ip': {'vrf': 'mgmt'}}},
                          'system': {'aaa': {'tacacs': {'secret': SECRET}}}}, password=PASSWORD)
    switch.start(cert, key)
    yield switch
    switch.stop()


CUMULUS = """    - name: Apply the policy through NVUE
      ansible.builtin.include_role:
        name: hpcfabric.cluster.switch_qos
        tasks_from: apply_cumulus.yml
"""


def run_cumulus(local_play, switch, *args, password=PASSWORD, **host_vars):
    return local_play('switch1', CUMULUS, '-vvv', *args, switch_qos_ports=['swp1', 'swp2'],
                      switch_qos_platform='cumulus', switch_qos_nvue_host='127.0.0.1',
                      switch_qos_nvue_port=switch.server.server_address[1], switch_qos_nvue_validate_certs=False,
                      switch_qos_nvue_password=password, switch_qos_nvue_apply_retries=3, **host_vars)


def test_cumulus_applies_reads_back_and_changes_nothing_the_second_time(local_play, nvue):
    rc, out = run_cumulus(local_play, nvue)
    assert rc == 0, out
    # only the subtrees the role writes are read: the rest of the configuration (its secrets) never leaves the switch
    reads = [path for method, path, _body in nvue.requests if method == 'GET' and 'rev=applied' in path]
    assert reads == ['/nvue_v1/qos?rev=applied', '/nvue_v1/interface?rev=applied'] * 2
    assert [push['op'] for push in nvue.pushes] == ['patch', 'apply']
    assert nvue.pushes[0]['body']['interface']['swp1']['link']['mtu'] == 9214
    assert nvue.applied['qos']['mapping']['default-global']['dscp']['26'] == {'switch-priority': 3}
    assert nvue.applied['system']['aaa']['tacacs']['secret'] == SECRET
    assert SECRET not in out and PASSWORD not in out
    # the differences from the policy are shown before they are applied
    assert 'path: /interface/swp1/link/mtu' in out
    assert changed(out) > 0

    rc, out = run_cumulus(local_play, nvue)
    assert rc == 0, out
    assert changed(out) == 0
    assert len(nvue.pushes) == 2


def test_cumulus_drift_is_named_and_repaired(local_play, nvue):
    assert run_cumulus(local_play, nvue)[0] == 0
    nvue.drift('qos/mapping/default-global/dscp/26/switch-priority', 1)
    nvue.drift('interface/swp2/link/mtu', 9000)

    rc, out = run_cumulus(local_play, nvue, switch_qos_verify_only=True)
    assert rc != 0
    assert 'switch1 differs from the policy in 2 settings (switch_qos_verify_only: nothing was changed)' in out
    assert 'switch1: global: DSCP 26 traffic class is 1, expected 3' in out
    assert 'switch1: swp2: MTU is 9000, expected 9214' in out
    assert len(nvue.pushes) == 2

    rc, out = run_cumulus(local_play, nvue)
    assert rc == 0, out
    assert [push['op'] for push in nvue.pushes[2:]] == ['patch', 'apply']
    assert nvue.applied['interface']['swp2']['link']['mtu'] == 9214


def test_cumulus_a_port_on_a_lossy_pfc_profile_fails_the_read_back_after_applying(local_play, nvue):
    assert run_cumulus(local_play, nvue)[0] == 0
    # PFC off on one port: a profile the role does not write, so it is named, not changed
    nvue.drift('qos/pfc/lossy', {'switch-priority': {}})
    nvue.drift('interface/swp2/qos', {'pfc': {'profile': 'lossy'}})
    rc, out = run_cumulus(local_play, nvue)
    assert rc != 0
    assert ('switch1 differs from the policy in 1 settings (read back after applying): '
            'switch1: swp2: PFC priorities is none, expected 3') in out
    assert len(nvue.pushes) == 2


def test_cumulus_check_mode_shows_the_differences_and_changes_nothing(local_play, nvue):
    rc, out = run_cumulus(local_play, nvue, '--check')
    assert rc == 0, out
    assert 'path: /interface/swp1/link/mtu' in out
    assert 'check mode: nothing was applied to switch1' in out
    assert nvue.pushes == [] and [r for r in nvue.requests if r[0] != 'GET'] == []


def test_cumulus_says_which_request_failed(local_play, nvue):
    rc, out = run_cumulus(local_play, nvue, password='wrong')
    assert rc != 0
    assert ('switch1: Read the applied NVUE qos tree failed: Status code was 401 and not [200]: '
            'HTTP Error 401: Unauthorized') in out
    assert SECRET not in out


def test_cumulus_says_how_a_revision_ended(local_play, nvue):
    nvue.apply_outcome = 'invalid'
    rc, out = run_cumulus(local_play, nvue)
    assert rc != 0
    assert 'NVUE revision changeset/cumulus/2026-01-01_00.00.00_0001 is invalid, not applied' in out
    assert SECRET not in out and PASSWORD not in out


def test_cumulus_says_when_polling_gave_up(local_play, nvue):
    nvue.apply_outcome = 'applying'
    rc, out = run_cumulus(local_play, nvue)
    assert rc != 0
    assert ('Wait until NVUE has finished applying the revision failed: '
            'revision changeset/cumulus/2026-01-01_00.00.00_0001 still applying') in out


# --- SONiC: show, config and sonic-db-cli ------------------------------------------------------------------------
SONIC = """    - name: Apply the policy with config apply-patch, the stand-in commands first on PATH
      environment:
        PATH: "{{ fake_bin }}:{{ path }}"
        SONIC_STANDIN_DIR: "{{ sonic_dir }}"
      block:
        - name: Apply the policy
          ansible.builtin.include_role:
            name: hpcfabric.cluster.switch_qos
            tasks_from: apply_sonic.yml
"""


class Sonic(object):
    """A stand-in SONiC switch in a temporary directory: its commands, its CONFIG_DB and what was pushed."""

    def __init__(self, tmp_path, local_play):
        self.bin = tmp_path / 'bin'
        self.dir = tmp_path / 'sonic'
        self.bin.mkdir()
        for name in ('show', 'config', 'sonic-db-cli'):
            (self.bin / name).write_text('#!/bin/sh\nexec %s %s %s "$@"\n' % (sys.executable, SONIC_STANDIN, name))
            (self.bin / name).chmod(0o755)
        self.patch_path = tmp_path / 'patch.json'
        self.local_play = local_play
        self.command('init', '--hostname', 'switch1', '--ports', '2')
        self.command('sonic-db-cli', 'CONFIG_DB', 'hset', 'TACPLUS|global', 'passkey', SECRET)

    def command(self, *args):
        env = dict(os.environ, SONIC_STANDIN_DIR=str(self.dir))
        return subprocess.run([sys.executable, str(SONIC_STANDIN), *args], env=env, check=True, capture_output=True,
                              text=True).stdout

    @property
    def running(self):
        return json.loads((self.dir / 'running.json').read_text())

    @property
    def pushes(self):
        path = self.dir / 'pushes.jsonl'
        lines = path.read_text().splitlines() if path.exists() else []
        return [entry for entry in map(json.loads, lines) if entry['command'] in ('config apply-patch', 'config save')]

    def run(self, *args, **host_vars):
        return self.local_play('switch1', SONIC, '-vvv', *args, fake_bin=str(self.bin), path=os.environ['PATH'],
                               sonic_dir=str(self.dir), switch_qos_platform='sonic',
                               switch_qos_ports=['Ethernet0', 'Ethernet4'], ansible_become=False,
                               switch_qos_sonic_patch_path=str(self.patch_path), **host_vars)


@pytest.fixture
def sonic(tmp_path, local_play):
    return Sonic(tmp_path, local_play)


def test_sonic_applies_reads_back_and_changes_nothing_the_second_time(sonic):
    assert sonic.running['DSCP_TO_TC_MAP']['AZURE']['26'] == '1'
    rc, out = sonic.run()
    assert rc == 0, out
    assert [push['command'] for push in sonic.pushes] == ['config apply-patch', 'config save']
    patch = sonic.pushes[0]['patch']
    assert {'op': 'replace', 'path': '/DSCP_TO_TC_MAP/AZURE/26', 'value': '3'} in patch
    assert {'op': 'replace', 'path': '/PORT_QOS_MAP/Ethernet4/pfc_enable', 'value': '3'} in patch
    running = sonic.running
    assert running['DSCP_TO_TC_MAP']['AZURE']['26'] == '3' and running['PORT']['Ethernet0']['mtu'] == '9214'
    assert json.loads((sonic.dir / 'config_db.json').read_text()) == running
    assert SECRET not in out
    assert changed(out) > 0

    rc, out = sonic.run()
    assert rc == 0, out
    assert changed(out) == 0
    assert len(sonic.pushes) == 2

    # an audit of a switch that holds the policy passes
    rc, out = sonic.run(switch_qos_verify_only=True)
    assert rc == 0, out
    assert changed(out) == 0 and len(sonic.pushes) == 2


def test_sonic_drift_is_named_by_verify_only_without_a_change_and_repaired_by_a_run(sonic):
    assert sonic.run()[0] == 0
    sonic.command('sonic-db-cli', 'CONFIG_DB', 'hset', 'DSCP_TO_TC_MAP|AZURE', '26', '1')
    sonic.command('sonic-db-cli', 'CONFIG_DB', 'hset', 'PORT_QOS_MAP|Ethernet4', 'pfc_enable', '')
    drifted = sonic.running

    rc, out = sonic.run(switch_qos_verify_only=True)
    assert rc != 0
    assert 'switch1 differs from the policy in 2 settings (switch_qos_verify_only: nothing was changed)' in out
    assert 'switch1: global: DSCP 26 traffic class is 1, expected 3' in out
    assert 'switch1: Ethernet4: PFC priorities is none, expected 3' in out
    assert sonic.running == drifted and len(sonic.pushes) == 2
    assert SECRET not in out

    rc, out = sonic.run()
    assert rc == 0, out
    assert sonic.pushes[2]['patch'] == [
        {'op': 'replace', 'path': '/DSCP_TO_TC_MAP/AZURE/26', 'value': '3'},
        {'op': 'replace', 'path': '/PORT_QOS_MAP/Ethernet4/pfc_enable', 'value': '3'}]


def test_sonic_check_mode_shows_the_differences_and_changes_nothing(sonic):
    before = sonic.running
    rc, out = sonic.run('--check')
    assert rc == 0, out
    assert 'path: /PORT/Ethernet0/mtu' in out
    assert 'check mode: nothing was applied to switch1' in out
    assert sonic.running == before and sonic.pushes == [] and not sonic.patch_path.exists()
    assert SECRET not in out


def test_sonic_says_why_the_patch_was_refused(sonic):
    (sonic.dir / 'refuse').touch()
    rc, out = sonic.run()
    assert rc != 0
    assert 'exited 1: Error: Given patch will produce invalid config' in out
    assert 'config apply-patch --dry-run' in out
    assert SECRET not in out
    assert sonic.pushes == []


def test_sonic_says_why_the_configuration_was_not_read(sonic):
    (sonic.dir / 'running.json').unlink()
    rc, out = sonic.run()
    assert rc != 0
    assert 'switch1: show runningconfiguration all exited 1: Error: cannot read CONFIG_DB' in out


# --- playbooks/switches.yml: the switches, then hosts and switches compared with each other -----------------------
def test_switches_playbook_compares_the_hosts_read_back_with_the_switches(sonic, tmp_path, playbook, monkeypatch):
    monkeypatch.setenv('PATH', '%s:%s' % (sonic.bin, os.environ['PATH']))
    monkeypatch.setenv('SONIC_STANDIN_DIR', str(sonic.dir))

    def run(host_mtu):
        # a node's read-back as the roce_qos role publishes it earlier in site.yml
        nic = {'name': 'ens1f0np0', 'ibdev': 'mlx5_0', 'present': True, 'rdma_capable': True, 'mtu': host_mtu,
               'qos': {'trust': 'dscp', 'dscp2prio': {'26': [3], '48': [6]}, 'pfc': [3]}}
        inventory = {'all': {'children': {
            'gpu_nodes': {'hosts': {'node01': {'roce_qos_readback': {'interfaces': [nic]}}}},
            'fabric_switches': {'hosts': {'switch1': {
                'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'ansible_become': False,
                'switch_qos_platform': 'sonic', 'switch_qos_ports': ['Ethernet0', 'Ethernet4'],
                'switch_qos_sonic_patch_path': str(sonic.patch_path)}}}}}}
        (tmp_path / 'fabric.yml').write_text(json.dumps(inventory))
        return playbook(tmp_path / 'fabric.yml', 'switches.yml')

    rc, out = run(9000)
    assert rc == 0, out
    out = ' '.join(out.split())  # the YAML callback folds long messages
    assert ('compared 1 RoCE NICs, 1 host interface MTUs and 2 ports of 1 switches (DSCP 26, 48 to priority, '
            'lossless priorities, MTU)') in out
    rc, out = run(9200)
    assert rc != 0
    out = ' '.join(out.split())
    assert ('MTU: node01 mlx5_0/ens1f0np0 sends 9200-byte packets (9222-byte frames with Ethernet header, 802.1Q tag '
            'and FCS), more than switch1 Ethernet0 (MTU 9214), switch1 Ethernet4 (MTU 9214) carry') in out
