# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""switch_qos on Arista EOS: the role, through ansible-playbook, arista.eos.eos_config and eos_command over
ansible.netcommon.httpapi, against a stand-in of the switch's eAPI on this machine (tests/standins/eos_eapi.py, TEST ONLY).

Apply, read back, a second run that changes nothing, a switch that drifts (DSCP 26 in another traffic class, PFC off
on one port) named in the failure, --check that shows the differences and commits nothing, and the read-only audit
(switch_qos_verify_only). The switch's configuration holds secrets: no run, at -vvv, prints them.
"""
from __future__ import annotations
import re
import sys

import pytest
import yaml

from checkout import ROOT

sys.path.insert(0, str(ROOT / 'tests' / 'standins'))
import eos_eapi  # noqa: E402  pylint: disable=wrong-import-position

SECRET = 'sha512-secret-that-must-not-be-printed'
PASSWORD = 'eapi-password-that-must-not-be-printed'
PORTS = ['Ethernet1/1', 'Ethernet2/1']
PLAY = """- name: Configure the switch's RoCE QoS
  hosts: all
  gather_facts: false
  roles:
    - role: hpcfabric.cluster.switch_qos
"""
# DSCP 26 moved to traffic class 1 (the SONiC-style default) and PFC turned off on the second port
DRIFT = ['qos map dscp 26 to traffic-class 1', 'interface Ethernet2/1', 'no priority-flow-control']
DRIFT_LINES = ['switch1: global: DSCP 26 traffic class is 1, expected 3',
               'switch1: Ethernet2/1: PFC priorities is none, expected 3']


@pytest.fixture
def eos(tmp_path, playbook):
    """The stand-in switch and ``run(*ansible_playbook_args, **host_vars)``: (rc, output, the run's requests, the
    configuration commands it sent)."""
    switch = eos_eapi.Eapi(hostname='switch1', password=PASSWORD, secret=SECRET)
    server = eos_eapi.serve(switch)
    (tmp_path / 'play.yml').write_text(PLAY)

    def run(*args, **host_vars):
        host = {'ansible_connection': 'ansible.netcommon.httpapi', 'ansible_network_os': 'arista.eos.eos',
                'ansible_host': '127.0.0.1', 'ansible_httpapi_port': server.server_address[1],
                'ansible_httpapi_use_ssl': False, 'ansible_user': 'admin', 'ansible_password': PASSWORD,
                'ansible_python_interpreter': sys.executable,
                'switch_qos_platform': 'eos', 'switch_qos_ports': PORTS}
        host.update(host_vars)
        (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'switch1': host}}}))
        first, first_pushed = len(switch.requests), len(switch.pushed)
        rc, out = playbook(tmp_path / 'hosts.yml', tmp_path / 'play.yml', '-vvv', *args)
        return rc, out, switch.requests[first:], switch.pushed[first_pushed:]

    yield switch, run
    server.shutdown()


def changed(out):
    return int(re.search(r'^switch1\s+: ok=\d+\s+changed=(\d+)', out, re.M).group(1))


def sent(requests, command):
    return any(str(cmd).startswith(command) for cmds, _fmt in requests for cmd in cmds)


def test_eos_applies_reads_back_and_the_second_run_changes_nothing(eos):
    switch, run = eos
    before = switch.running.text()
    rc, out, _requests, pushed = run()
    assert rc == 0, out
    assert changed(out) == 1
    assert 'mtu 9214' in pushed and len(switch.commits) == 1 and not switch.sessions
    running = switch.running.text()
    assert '   priority-flow-control priority 3 no-drop' in running and '   mtu 1500' not in running
    # saved: the startup-config is what runs
    assert switch.startup == running != before
    assert 'TASK [hpcfabric.cluster.switch_qos : Check that the switch holds the policy]' in out
    assert SECRET not in out and PASSWORD not in out

    rc, out, requests, pushed = run()
    assert rc == 0, out
    assert changed(out) == 0, out
    assert switch.running.text() == running
    # only the lines EOS does not show, its defaults, are sent again; the session differs in nothing; nothing saved
    assert sorted(set(pushed) - {'interface Ethernet1/1', 'interface Ethernet2/1', 'uc-tx-queue 6'}) == [
        'priority strict', 'qos map dscp 26 to traffic-class 3', 'qos map dscp 48 to traffic-class 6']
    assert not sent(requests, 'copy running-config startup-config')
    assert SECRET not in out and PASSWORD not in out


def test_eos_a_switch_that_drifts_is_named_by_setting(eos):
    switch, run = eos
    switch.drift = list(DRIFT)
    rc, out, _requests, _pushed = run()
    assert rc != 0
    assert switch.commits
    # those two, and nothing else
    assert set(re.findall(r"switch1: [^\s;]+: [^\n';]* is [^\n';]*, expected [^'\s;]+", out)) == set(DRIFT_LINES), out
    assert SECRET not in out and PASSWORD not in out


def test_eos_check_mode_shows_the_differences_and_commits_nothing(eos):
    switch, run = eos
    before, startup = switch.running.text(), switch.startup
    rc, out, requests, _pushed = run('--check', '--diff')
    assert rc == 0, out
    # eos_config's session diff, and the settings that differ now
    assert '+   mtu 9214' in out and '-   mtu 1500' in out
    assert 'check mode: nothing was applied to switch1' in ' '.join(out.split())
    assert changed(out) == 1
    # the session was aborted: nothing committed, nothing saved, the configuration as it was
    assert sent(requests, 'abort') and not sent(requests, 'commit') and not sent(requests, 'copy ')
    assert switch.commits == [] and switch.sessions == {}
    assert switch.running.text() == before and switch.startup == startup
    assert SECRET not in out and PASSWORD not in out


def test_eos_verify_only_reads_and_compares_changing_nothing(eos):
    switch, run = eos
    rc, out, _requests, _pushed = run()
    assert rc == 0, out

    rc, out, requests, pushed = run(switch_qos_verify_only=True)
    assert rc == 0, out
    assert changed(out) == 0
    assert pushed == [] and not sent(requests, 'configure') and not sent(requests, 'copy ')
    assert sent(requests, 'show running-config')

    switch.configure(DRIFT)
    running = switch.running.text()
    rc, out, requests, pushed = run(switch_qos_verify_only=True)
    assert rc != 0
    for line in DRIFT_LINES:
        assert line in out
    assert pushed == [] and not sent(requests, 'configure') and switch.running.text() == running
    assert SECRET not in out and PASSWORD not in out


def test_eos_a_command_the_switch_refuses_is_named_and_nothing_is_committed(eos):
    switch, run = eos
    switch.unknown = [r'uc-tx-queue']   # a 7280R: switch_qos_eos_queue_keyword should have been tx-queue
    before = switch.running.text()
    rc, out, requests, _pushed = run()
    assert rc != 0
    assert ("switch1: Configure the DSCP map, PFC, ECN, ETS and MTU in one configuration session, then save it as "
            "startup-config failed: Invalid input (at token 0: 'uc-tx-queue')") in ' '.join(out.split())
    assert sent(requests, 'abort') and not sent(requests, 'commit')
    assert switch.running.text() == before and switch.commits == []


def test_eos_says_why_the_switch_was_not_read(eos):
    _switch, run = eos
    rc, out, _requests, _pushed = run(ansible_password='wrong', switch_qos_verify_only=True)
    assert rc != 0
    assert 'switch1: Read the running configuration back failed: HTTP Error 401: Unauthorized' in out
    assert SECRET not in out
