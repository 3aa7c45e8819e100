# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""os_base's checks of its settings and its read-back of the kernel's and systemd's live values.

The sysctl output is this format as procps-ng's sysctl prints it (``key = value``, fields of a multi-value parameter
separated by tabs, recorded on Debian 12); the systemctl output is ``systemctl show -p DefaultLimitMEMLOCK -p
DefaultLimitNOFILE`` on a fresh Debian 12 node (systemd 252: 8 MiB locked memory, 524288 files) and after os_base.
"""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_tuning import (
    settings_problems, sysctl_drift, systemd_limit_drift)

DEFAULT_SYSCTL = {'net.ipv4.neigh.default.gc_thresh1': 8192, 'net.ipv4.conf.all.arp_ignore': 1}
SYSCTL_FRESH = ('net.ipv4.conf.all.arp_ignore = 0\n'
                'net.ipv4.neigh.default.gc_thresh1 = 128\n'
                'net.ipv4.tcp_rmem = 4096\t131072\t33554432\n')
SYSCTL_TUNED = ('net.ipv4.conf.all.arp_ignore = 1\n'
                'net.ipv4.neigh.default.gc_thresh1 = 8192\n'
                'net.ipv4.tcp_rmem = 4096\t131072\t33554432\n')
SYSTEMD_FRESH = 'DefaultLimitMEMLOCK=8388608\nDefaultLimitNOFILE=524288\n'
SYSTEMD_TUNED = 'DefaultLimitMEMLOCK=infinity\nDefaultLimitNOFILE=1048576\n'


def test_the_defaults_pass():
    assert settings_problems('unlimited', 1048576, DEFAULT_SYSCTL, []) == []
    assert settings_problems('65536', '4096', {'net.ipv4.tcp_rmem': '4096\t131072\t33554432',
                                               'net.ipv4.conf.eth0/100.rp_filter': 2,
                                               'kernel.core_pattern': '|/usr/lib/core %p'},
                             ['ntp1.example.org', '10.0.0.1', 'fd00::1']) == []


@pytest.mark.parametrize('memlock, nofile, sysctl, ntp, problem', [
    ('64G', 1024, {}, [], 'os_base_memlock "64G" is neither unlimited nor a positive number of KiB'),
    ('0', 1024, {}, [], 'os_base_memlock "0" is neither unlimited'),
    (True, 1024, {}, [], 'os_base_memlock true is neither unlimited'),
    ('unlimited', 0, {}, [], 'os_base_nofile 0 is not a number of files from 1 to 1073741816'),
    ('unlimited', 2 ** 31, {}, [], 'os_base_nofile 2147483648 is not a number of files'),
    ('unlimited', 'many', {}, [], 'os_base_nofile "many" is not a number'),
    ('unlimited', 1024, {'net.ipv4.ip_forward\nkernel.sysrq': 1}, [],
     'kernel parameter "net.ipv4.ip_forward\\nkernel.sysrq" is not a sysctl name'),
    ('unlimited', 1024, {'ip_forward': 1}, [], 'kernel parameter "ip_forward" is not a sysctl name'),
    ('unlimited', 1024, {'net.ipv4.ip_forward': '1\nkernel.sysrq = 1'}, [],
     'kernel parameter net.ipv4.ip_forward: "1\\nkernel.sysrq = 1" holds a line break or control character'),
    ('unlimited', 1024, {'net.ipv4.ip_forward': None}, [],
     'kernel parameter net.ipv4.ip_forward: null is not a number or a one-line string'),
    ('unlimited', 1024, {'net.ipv4.ip_forward': ' '}, [], 'is not a number or a one-line string'),
    ('unlimited', 1024, [], [], 'os_base_sysctl and os_base_sysctl_extra must be mappings'),
    ('unlimited', 1024, {}, ['pool.ntp.org\nserver evil.example iburst'],
     'os_base_ntp_servers[0] "pool.ntp.org\\nserver evil.example iburst" is not a host name or IP address'),
    ('unlimited', 1024, {}, ['ntp one'], 'os_base_ntp_servers[0] "ntp one" is not a host name'),
    ('unlimited', 1024, {}, 'pool.ntp.org', 'os_base_ntp_servers must be a list'),
], ids=['memlock-unit', 'memlock-zero', 'memlock-bool', 'nofile-zero', 'nofile-too-big', 'nofile-word',
        'key-newline', 'key-no-dot', 'value-newline', 'value-null', 'value-blank', 'sysctl-not-dict',
        'ntp-newline', 'ntp-blank', 'ntp-not-list'])
def test_malformed_settings_are_named(memlock, nofile, sysctl, ntp, problem):
    problems = settings_problems(memlock, nofile, sysctl, ntp)
    assert len(problems) == 1, problems
    assert problem in problems[0]


def test_sysctl_drift_names_each_parameter_the_kernel_runs_differently():
    assert sysctl_drift(DEFAULT_SYSCTL, SYSCTL_FRESH) == [
        'net.ipv4.conf.all.arp_ignore is 0, expected 1',
        'net.ipv4.neigh.default.gc_thresh1 is 128, expected 8192']
    assert sysctl_drift(DEFAULT_SYSCTL, SYSCTL_TUNED) == []


def test_sysctl_drift_compares_multi_field_values_field_by_field():
    assert sysctl_drift({'net.ipv4.tcp_rmem': '4096 131072  33554432'}, SYSCTL_TUNED) == []
    assert sysctl_drift({'net.ipv4.tcp_rmem': '4096 131072 6291456'}, SYSCTL_TUNED) == [
        'net.ipv4.tcp_rmem is 4096\t131072\t33554432, expected 4096 131072 6291456']


def test_sysctl_drift_names_a_parameter_sysctl_did_not_print():
    assert sysctl_drift({'net.core.rmem_max': 1}, SYSCTL_TUNED) == ['net.core.rmem_max: sysctl did not print it']


def test_systemd_drift_reads_fresh_debian_defaults_as_drift():
    assert systemd_limit_drift('unlimited', 1048576, SYSTEMD_FRESH) == [
        'DefaultLimitMEMLOCK is 8388608, expected infinity', 'DefaultLimitNOFILE is 524288, expected 1048576']
    assert systemd_limit_drift('unlimited', 1048576, SYSTEMD_TUNED) == []
    assert systemd_limit_drift('infinity', '1048576', SYSTEMD_TUNED) == []


def test_systemd_counts_memlock_in_bytes_where_limits_d_counts_kib():
    # 64 MiB as limits.d reads it: a DefaultLimitMEMLOCK=65536 (bytes) would be 1024 times too small
    assert systemd_limit_drift('65536', 1048576, 'DefaultLimitMEMLOCK=67108864\nDefaultLimitNOFILE=1048576') == []
    assert systemd_limit_drift(65536, 1048576, 'DefaultLimitMEMLOCK=65536\nDefaultLimitNOFILE=1048576') == [
        'DefaultLimitMEMLOCK is 65536, expected 67108864']


def test_systemd_drift_names_a_limit_systemctl_did_not_show():
    assert systemd_limit_drift('unlimited', 1048576, 'DefaultLimitNOFILE=1048576') == [
        'DefaultLimitMEMLOCK is not shown, expected infinity']


@pytest.mark.parametrize('call', [
    lambda: sysctl_drift([], ''), lambda: sysctl_drift({}, None), lambda: systemd_limit_drift('unlimited', 1, None)])
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()
