# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The os_base role's limits, kernel parameters and time servers: their checks, and the read-back of what applied.

The settings end up as lines of limits.d, sysctl.d, systemd's system.conf.d and chrony's configuration, so a value
that holds a line break would add a line of its own; those are refused with the other malformed values before any
host is touched. The read-back compares what the kernel and the systemd manager report (``sysctl`` and
``systemctl show`` output) with the settings, in the units those tools use.
"""
from __future__ import annotations

import json
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import hostname_problem

UNLIMITED = ('unlimited', 'infinity')
# a parameter's dot-separated path under /proc/sys; interface names in it may hold - @ : + (a VLAN's dot is "/")
_SYSCTL_KEY = re.compile(r'^[a-z0-9_]+(\.[A-Za-z0-9_@:+/-]+)+$')
# what sysctl.d takes as one value: printable characters and the tabs of multi-field values, on one line
_SYSCTL_VALUE_UNSAFE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f]')
_IP_ADDRESS = re.compile(r'^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)$')
# systemd's RLIMIT_NOFILE ceiling (fs.nr_open's largest value)
_NOFILE_MAX = 1073741816


def _positive_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return int(value) or None
    return None


def settings_problems(memlock, nofile, sysctl, ntp_servers):
    """One message per malformed setting, naming the variable; empty when os_base can write them all."""
    problems = []
    if not (isinstance(memlock, str) and memlock in UNLIMITED) and _positive_int(memlock) is None:
        problems.append('os_base_memlock %s is neither unlimited nor a positive number of KiB' % json.dumps(memlock))
    count = _positive_int(nofile)
    if count is None or count > _NOFILE_MAX:
        problems.append('os_base_nofile %s is not a number of files from 1 to %d' % (json.dumps(nofile), _NOFILE_MAX))
    if not isinstance(sysctl, dict):
        problems.append('os_base_sysctl and os_base_sysctl_extra must be mappings of parameter to value')
        sysctl = {}
    for key, value in sysctl.items():
        if not isinstance(key, str) or not _SYSCTL_KEY.fullmatch(key):
            problems.append('kernel parameter %s is not a sysctl name (dot-separated, as in net.ipv4.ip_forward)'
                            % json.dumps(key))
        elif isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() == '':
            problems.append('kernel parameter %s: %s is not a number or a one-line string' % (key, json.dumps(value)))
        elif _SYSCTL_VALUE_UNSAFE.search(str(value)):
            problems.append('kernel parameter %s: %s holds a line break or control character' % (key, json.dumps(value)))
    if not isinstance(ntp_servers, list):
        problems.append('os_base_ntp_servers must be a list of host names or addresses')
        ntp_servers = []
    for index, server in enumerate(ntp_servers):
        if not (isinstance(server, str) and _IP_ADDRESS.fullmatch(server)) and hostname_problem(server):
            problems.append('os_base_ntp_servers[%d] %s is not a host name or IP address' % (index, json.dumps(server)))
    return problems


def _normal(value):
    """A kernel parameter as sysctl prints it: fields separated by single blanks."""
    return ' '.join(str(value).split())


def _key_values(text, separator):
    """``key<separator>value`` lines as a dict, stripped; other lines ignored."""
    values = {}
    for line in text.splitlines():
        key, found, value = line.partition(separator)
        if found:
            values[key.strip()] = value.strip()
    return values


def sysctl_drift(wanted, sysctl_output):
    """One line per kernel parameter of ``wanted`` whose live value (``sysctl KEY...`` output) differs or is missing."""
    if not isinstance(wanted, dict) or not isinstance(sysctl_output, str):
        raise ValueError('wanted must be a mapping and sysctl_output the text sysctl printed')
    live = _key_values(sysctl_output, ' = ')
    drift = []
    for key in sorted(wanted):
        if key not in live:
            drift.append('%s: sysctl did not print it' % key)
        elif _normal(live[key]) != _normal(wanted[key]):
            drift.append('%s is %s, expected %s' % (key, live[key], _normal(wanted[key])))
    return drift


def systemd_limit_drift(memlock, nofile, show_output):
    """What the systemd manager reports (``systemctl show -p DefaultLimitMEMLOCK -p DefaultLimitNOFILE``) against
    the limits: memlock in KiB (as limits.d reads it) is bytes there, unlimited is ``infinity``."""
    if not isinstance(show_output, str):
        raise ValueError('show_output must be the text systemctl show printed')
    shown = _key_values(show_output, '=')
    expected = {
        'DefaultLimitMEMLOCK': 'infinity' if memlock in UNLIMITED else str(int(memlock) * 1024),
        'DefaultLimitNOFILE': str(int(nofile)),
    }
    return ['%s is %s, expected %s' % (key, shown.get(key, 'not shown'), want)
            for key, want in expected.items() if shown.get(key) != want]
