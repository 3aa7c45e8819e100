# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The input rules of the roce_qos and switch_qos roles (module_utils/role_settings/roce_qos.py, switch_qos.py): what
would reach the udev rule, the systemd units, a switch's configuration or the NVUE URL."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.plugins.filter.core import comment

from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import roce_qos, switch_qos

ROLES = Path(__file__).resolve().parents[4] / 'roles'


def defaults(role):
    return yaml.safe_load((ROLES / role / 'defaults' / 'main.yml').read_text())


def roce(**values):
    return roce_qos.problems(dict(defaults('roce_qos'), **values))


def switch(**values):
    settings = dict((name, None if isinstance(value, str) and '{{' in value else value)
                    for name, value in defaults('switch_qos').items())
    settings.update(switch_qos_platform='cumulus', switch_qos_ports=['swp1', 'swp2'])
    return switch_qos.problems(dict(settings, **values))


def test_the_defaults_pass():
    assert roce() == []
    assert switch() == []


def test_roce_interfaces_a_site_names_pass():
    assert roce(roce_qos_interfaces=['enp1s0f0np0', 'ens1f1np1', 'eth2.100', 'ib_fab0', 'bond-fab0']) == []


@pytest.mark.parametrize('name', ['ens1f0np0\n', 'ens1f0np0"', "ens1f0np0'", 'ens1f0 np0', 'ens1f0np0|eth0', 'ens*',
                                  'e[0-9]', 'ens1f0np0#', '!eth0', 'abcdefghijklmnop', ''])
def test_roce_interfaces_that_break_or_widen_the_udev_match_are_refused(name):
    found = roce(roce_qos_interfaces=['ens1f0np0', name])
    assert [label for label, _message in found] == ['roce_qos_interfaces[1]']
    assert 'is not an interface name' in found[0][1]


@pytest.mark.skipif(not shutil.which('systemd-escape'), reason='needs systemd-escape')
def test_the_udev_rule_starts_an_instance_whose_name_systemd_reads_back_as_the_interface():
    """udev names the unit with systemd-escape's answer for the interface (%k): its %I is the interface again and its
    %i the device unit's escaped name, a hyphen included (unescaped, bond-fab0 would read back as bond/fab0)."""
    template = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLES / 'roce_qos' / 'templates')))
    template.filters['comment'] = comment
    text = template.get_template('70-hpcfabric-roce-qos.rules.j2').render(ansible_managed='managed',
                                                                          __roce_qos_interfaces=['bond-fab0'])
    rule = [line for line in text.splitlines() if line and not line.startswith('#')][0]
    program = re.search(r'PROGRAM="([^"]*)"', rule).group(1).replace('%k', 'bond-fab0').split(' ')
    assert os.path.basename(program[0]) == 'systemd-escape'
    unit = subprocess.run(['systemd-escape'] + program[1:], capture_output=True, text=True, check=True).stdout.strip()
    assert unit == 'hpcfabric-roce-qos@bond\\x2dfab0.service'
    instance = unit[len('hpcfabric-roce-qos@'):-len('.service')]
    unescaped = subprocess.run(['systemd-escape', '--unescape', instance], capture_output=True, text=True, check=True)
    assert unescaped.stdout.strip() == 'bond-fab0'
    assert 'ENV{SYSTEMD_WANTS}+="%c"' in rule


def test_the_udev_rule_matches_exactly_the_interfaces_that_pass():
    """The role's rule, rendered from names the rules let through, matches each name and no other line is added."""
    names = ['enp1s0f0np0', 'ens1f1np1', 'eth2.100']
    assert roce(roce_qos_interfaces=names) == []
    template = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLES / 'roce_qos' / 'templates')))
    template.filters['comment'] = comment
    text = template.get_template('70-hpcfabric-roce-qos.rules.j2').render(ansible_managed='managed',
                                                                          __roce_qos_interfaces=names)
    rules = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert len(rules) == 1 and 'KERNEL=="%s"' % '|'.join(names) in rules[0]


@pytest.mark.parametrize('value, rule', [
    ('python3', 'not an absolute normalised path'), ('auto', 'not an absolute normalised path'),
    ('/usr/bin/python3 -u', 'blank, quote'), ('/usr/bin/python3\nExecStartPre=/bin/sh', 'blank, quote'),
    ('/usr/bin/"python3"', 'blank, quote'), ('/opt/py%i/bin/python3', 'systemd specifier'),
    ('/usr/bin/', 'not an absolute normalised path'),
])
def test_an_interpreter_that_is_not_one_path_is_refused(value, rule):
    found = roce(roce_qos_python=value)
    assert [label for label, _message in found] == ['roce_qos_python'] and rule in found[0][1]


@pytest.mark.parametrize('value', ['/usr/bin/python3', '/usr/libexec/platform-python', '/opt/venv/bin/python3.12'])
def test_interpreters_pass(value):
    assert roce(roce_qos_python=value) == []


def test_the_script_dir_is_the_role_s_own_and_the_config_a_plain_path():
    assert roce(roce_qos_script_dir='/usr/local/bin', roce_qos_config_path='/etc/hpcfabric/roce qos.json') == [
        ('roce_qos_script_dir', "'/usr/local/bin' is a system directory or under /proc, /sys or /dev, which the role "
                                "would take over"),
        ('roce_qos_config_path', "'/etc/hpcfabric/roce qos.json' holds a blank, quote, control, shell, glob, comment or "
                                 "systemd specifier (%) character")]


def test_unset_values_are_skipped():
    assert roce_qos.problems({'roce_qos_interfaces': None, 'roce_qos_python': None}) == []
    assert switch_qos.problems({'switch_qos_ports': None, 'switch_qos_nvue_host': None}) == []


@pytest.mark.parametrize('ports, expected', [
    (['swp1', 'swp2\n'], [('switch_qos_ports', "'swp2\\n' is not a port name")]),
    (['Ethernet0\nshutdown'], [('switch_qos_ports', "'Ethernet0\\nshutdown' is not a port name")]),
    (['swp1', 'swp1'], [('switch_qos_ports', 'swp1 listed more than once')]),
    ([], [('switch_qos_ports', 'must be a non-empty list of port names, got []')]),
    (['swp 1', 7], [('switch_qos_ports', "'swp 1' is not a port name"), ('switch_qos_ports', '7 is not a port name')]),
])
def test_switch_ports_that_would_end_a_configuration_line_are_refused(ports, expected):
    assert switch(switch_qos_ports=ports) == expected


@pytest.mark.parametrize('ports', [['swp1', 'swp32s3'], ['Ethernet0', 'Ethernet252'], ['Ethernet1/1', 'Ethernet49/1.1'],
                                   ['PortChannel0001']])
def test_switch_port_names_of_each_platform_pass(ports):
    assert switch(switch_qos_ports=ports) == []


@pytest.mark.parametrize('host', ['leaf01#', 'leaf01?x', 'evil.example.com/leaf01', '10.0.0.1@evil.example.com',
                                  'leaf 01', 'leaf01\n', '10.10.0.201:443', '2001:db8::201'])
def test_an_nvue_host_that_changes_the_url_is_refused(host):
    found = switch(switch_qos_nvue_host=host)
    assert [label for label, _message in found] == ['switch_qos_nvue_host']


@pytest.mark.parametrize('host', ['leaf01', 'leaf01.mgmt.example.com', '10.10.0.201', '[2001:db8::201]'])
def test_nvue_hosts_pass(host):
    assert switch(switch_qos_nvue_host=host) == []


@pytest.mark.parametrize('values, label', [
    ({'switch_qos_nvue_port': 0}, 'switch_qos_nvue_port'), ({'switch_qos_nvue_port': 65536}, 'switch_qos_nvue_port'),
    ({'switch_qos_nvue_port': True}, 'switch_qos_nvue_port'), ({'switch_qos_nvue_user': 'cumulus:x'}, 'switch_qos_nvue_user'),
    ({'switch_qos_nvue_user': ''}, 'switch_qos_nvue_user'), ({'switch_qos_nvue_user': 'cu\nmulus'}, 'switch_qos_nvue_user'),
    ({'switch_qos_sonic_patch_path': 'patch.json'}, 'switch_qos_sonic_patch_path'),
    ({'switch_qos_sonic_patch_path': '/tmp/p.json;reboot'}, 'switch_qos_sonic_patch_path'),
    ({'switch_qos_render_dir': '/usr/share'}, 'switch_qos_render_dir'),
])
def test_the_other_switch_strings_are_refused(values, label):
    assert [found_label for found_label, _message in switch(**values)] == [label]
