# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The rules of input_syntax one by one (the names, MACs and interface rules also run through the hostile inventory
table, tests/unit/plugins/filter/test_hostile_inventory.py)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    MOUNTABLE_SYSTEM_DIRS, SYSTEM_DIRS, account_problem, authorized_key_options, from_pattern_problem, hostname_problem,
    ifname_problem, label_problem, lnet_network_problem, mac_problem, mca_param_problem, named_problems,
    normal_path, path_problem, system_dir_problem, tcl_quote, ucx_device_problem, ucx_transport_problem,
    url_host_problem, url_problem)


@pytest.mark.parametrize('path', ['/var/tmp/hpcfabric-validate', '/opt/hpcx-v2.21', '/data/ckpt@run_1',
                                  '/usr/local/lib/hpcfabric', '/etc/mpi'])
def test_owned_directories_a_site_would_use_pass(path):
    assert path_problem(path) is None


@pytest.mark.parametrize('path, rule', [
    ('/', 'is a system directory'), ('/tmp', 'is a system directory'), ('/usr/local', 'is a system directory'),
    ('/sys/class/net', 'under /proc, /sys or /dev'), ('/dev/shm', 'is a system directory'),
    ('relative/dir', 'not an absolute normalised path'), ('/opt//hpcx', 'not an absolute normalised path'),
    ('//opt', 'not an absolute normalised path'), ('/opt/hpcx/', 'not an absolute normalised path'),
    ('/data/../etc', 'not an absolute normalised path'), ('/opt/./x', 'not an absolute normalised path'),
    ('/opt/my dir', 'blank, quote, control'), ('/opt/x\nExecStartPost=/bin/sh', 'blank, quote, control'),
    ('/opt/$(id)', 'blank, quote, control'), ('/opt/`id`', 'blank, quote, control'), ('/opt/a;b', 'blank, quote'),
    ('/opt/"x"', 'blank, quote'), ("/opt/x'", 'blank, quote'), ('/opt/*', 'blank, quote'), ('/opt/x#y', 'blank, quote'),
    ('/opt/[exec id]', 'blank, quote'), ('/opt/\u00a0x', 'blank, quote'), ('', 'must be a non-empty string'),
    (None, 'must be a non-empty string'), (7, 'must be a non-empty string'),
])
def test_owned_directories_that_would_hurt_are_refused_with_the_rule(path, rule):
    assert rule in path_problem(path)


def test_a_file_the_role_writes_may_sit_in_a_system_directory_but_keeps_the_syntax():
    assert path_problem('/etc/hpcfabric.json', owned=False) is None
    assert path_problem('/tmp', owned=False) is None
    assert 'blank, quote' in path_problem('/etc/mpi/host file', owned=False)


def test_a_private_directory_stays_out_of_world_writable_trees():
    assert path_problem('/root/.ansible/hpcfabric/ssh_trust/gpu_nodes', private=True) is None
    for shared in ('/tmp/keys', '/var/tmp/k'):
        assert 'every user can write to' in (path_problem(shared, private=True) or '')


@pytest.mark.parametrize('pattern', ['10.100.0.0/16', '10.0.0.5', 'fd00::/64', 'login01.example.org', 'b300-01'])
def test_from_patterns_that_name_sources_pass(pattern):
    assert from_pattern_problem(pattern) is None


@pytest.mark.parametrize('pattern', ['*', '10.0.0.*', '!10.0.0.1', '10.0.0.1,*', '10.0.0.0/8",command="sh', 'a b', '',
                                     None])
def test_from_patterns_that_widen_or_break_the_list_are_refused(pattern):
    assert from_pattern_problem(pattern)


def test_named_problems_label_each_entry_and_skip_unset_values():
    problems = named_problems({'f': ['10.0.0.0/8', '*', 'login01', '!x'], 'g': None}, 'from_pattern')
    assert [label for label, _problem in problems] == ['f[1]', 'f[3]']
    assert named_problems({'m': {'btl': 'tcp', 'Bad': 1}}, 'mca_param') == [
        ('m', "'Bad' is not an MCA parameter name (lower-case letters, digits and _)")]
    with pytest.raises(ValueError, match='values must be a mapping'):
        named_problems(['x'], 'account')
    with pytest.raises(ValueError, match="rule must be one of .* got 'sh'"):
        named_problems({'x': 'y'}, 'sh')


@pytest.mark.parametrize('value', ['mpiuser', 'hpc_user', '_svc', 'a' * 32])
def test_login_names_pass(value):
    assert account_problem(value) is None


@pytest.mark.parametrize('value', ['Mpiuser', '1user', '-user', 'mpi user', 'mpiuser\n', 'a' * 33, '', None, 'us;er'])
def test_bad_login_names_are_refused(value):
    assert 'is not a login name' in account_problem(value)


def test_root_needs_the_opt_in_named_in_the_message():
    assert 'set ssh_trust_allow_root: true' in account_problem('root', allow_variable='ssh_trust_allow_root')
    assert account_problem('root', allow_root=True) is None


@pytest.mark.parametrize('value', ['o2ib0(ib0)', 'o2ib(ens1f0np0)', 'tcp1(eth0,eth1)', 'tcp0(eth0)[0,1]', 'kfi(cxi0)'])
def test_lnet_networks_pass(value):
    assert lnet_network_problem(value) is None


@pytest.mark.parametrize('value', ['o2ib0', 'o2ib0()', 'udp0(eth0)', 'o2ib0(ib0,)', 'tcp0(eth0)\n', 'o2ib0(ib0)[x]',
                                   'o2ib0(ib0)"\ninstall lnet /bin/sh', 'O2IB0(ib0)', 'tcp0(eth 0)', 7])
def test_bad_lnet_networks_are_refused(value):
    assert lnet_network_problem(value) is not None


@pytest.mark.parametrize('value, problem', [
    ('mlx5_0:1', False), ('ens1f0np0', False), ('all', False), ('mlx5_0:1\n', True), ('mlx5_0:1,mlx5_1:1', True),
    ('mlx5_0:1;UCX_TLS=tcp', True), ('', True)])
def test_ucx_devices(value, problem):
    assert (ucx_device_problem(value) is not None) == problem


@pytest.mark.parametrize('value, problem', [
    ('rc', False), ('cuda_copy', False), ('^tcp', False), ('rc,ud', True), ('tcp\n', True), ('TCP', True), ('', True)])
def test_ucx_transports(value, problem):
    assert (ucx_transport_problem(value) is not None) == problem


@pytest.mark.parametrize('name, value, problem', [
    ('btl', '^openib,tcp', False), ('mpi_yield_when_idle', 1, False), ('pml_ucx_tls', 'any', False),
    ('btl', 'tcp\npml = ob1', True), ('btl ', 'tcp', True), ('Btl', 'tcp', True), ('btl', '', True),
    ('btl', ['tcp'], True), ('btl', None, True)])
def test_mca_params(name, value, problem):
    assert (mca_param_problem(name, value) is not None) == problem


@pytest.mark.parametrize('rule, value', [(label_problem, 'node01\n'), (hostname_problem, 'node01.example.com\n'),
                                         (mac_problem, '58:a2:e1:00:00:01\n')])
def test_a_trailing_line_break_is_refused(rule, value):
    assert rule(value) is not None


@pytest.mark.parametrize('value', ['rc,ud', '[exec id]', '$HOME', 'a"b', 'back\\slash', '{brace', 'semi;colon',
                                   '/opt/x y', 9000])
def test_tcl_quote_reads_back_in_tclsh_as_the_same_string(value):
    # tclsh: make setup installs tcl, the language Environment Modules reads modulefiles in
    script = 'puts -nonewline %s' % tcl_quote(value)
    run = subprocess.run([shutil.which('tclsh') or 'tclsh'], input=script, capture_output=True, text=True, check=False)
    assert (run.returncode, run.stdout) == (0, str(value)), run.stderr


def test_tcl_quote_refuses_a_line_break():
    with pytest.raises(ValueError, match='one printable line'):
        tcl_quote('a\nputs hi')


def test_authorized_key_options_are_built_from_checked_sources():
    assert authorized_key_options(['10.100.0.0/16', '10.10.0.11', 'login01.example.org']) == \
        'from="10.100.0.0/16,10.10.0.11,login01.example.org"'
    assert authorized_key_options([]) is None
    for bad in (['10.0.0.0/8",command="/bin/sh'], ['*'], ['10.0.0.1,*'], ['!10.0.0.1']):
        with pytest.raises(ValueError, match='is not an address, CIDR network or host name'):
            authorized_key_options(bad)
    with pytest.raises(ValueError, match='must be a list'):
        authorized_key_options('10.0.0.0/8')


@pytest.mark.parametrize('url', [
    'https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu24.04/x86_64/',
    'https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb',
    'https://mirror.example.com:8443/hpcx/hpcx-v2.22-gcc-doca_ofed-ubuntu24.04-cuda12-x86_64.tbz',
    'https://10.0.0.5/doca/', 'https://[fd00::5]:443/doca/', 'https://mirror', 'HTTPS://Mirror.Example.com/x',
    'https://objects.example.com/hpcx.tbz?X-Expires=3600&X-Sig=ab%2Fcd', 'file:///srv/mirror/doca/', 'file:/srv/mirror/',
])
def test_https_and_local_urls_pass(url):
    assert url_problem(url) is None


@pytest.mark.parametrize('url, rule', [
    # plain HTTP, unless allowed
    ('http://mirror.example.com/doca/', 'is plain HTTP: what it serves could be replaced on the way; use https://'),
    ('HTTP://mirror/x', 'is plain HTTP'),
    # not a URL a role can fetch from
    ('ftp://mirror.example.com/doca/', 'is not an https:// URL with a host, nor a file: URL'),
    ('mirror.example.com/doca/', 'is not an https:// URL with a host'), ('/srv/mirror', 'is not an https:// URL'),
    ('javascript:alert(1)', 'is not an https:// URL'), ('git+https://h/x', 'is not an https:// URL'),
    # one line, one URL: what would reach an apt source as a line or an option of its own
    ('https://h/doca/\ndeb [trusted=yes] http://evil/ ./', 'holds a blank, quote'),
    ('https://h/doca/ ./\nTrusted: yes', 'holds a blank, quote'), ('https://h/a b', 'holds a blank, quote'),
    ('https://h/\t', 'holds a blank, quote'), ('https://h/\r', 'holds a blank, quote'),
    ('https://h/\x00', 'holds a blank, quote'), ('https://h/\x7f', 'holds a blank, quote'),
    ('https://h/"x', 'holds a blank, quote'), ("https://h/x'", 'holds a blank, quote'), ('https://h/a\\b', 'holds a blank'),
    ('https://h/`id`', 'holds a blank'), ('https://h/<x>', 'holds a blank'), ('https://h/{x}', 'holds a blank'),
    ('https://h/a|b', 'holds a blank'), ('https://h/a^b', 'holds a blank'), ('https://h/\u00e9', 'non-ASCII'),
    ('https://h/\u00a0', 'non-ASCII'), ('https://h/x#frag', 'holds a fragment (#)'),
    # the host and port
    ('https:///doca/', 'has no valid host after https://'), ('https:/doca/', 'has no valid host'),
    ('https://', 'has no valid host'), ('https://bad_host/x', 'has no valid host'), ('https://-h/x', 'has no valid host'),
    ('https://h:0/', 'has no valid host'), ('https://h:65536/', 'has no valid host'), ('https://h:/x', 'has no valid host'),
    ('https://h:x/', 'has no valid host'), ('https://[zz]/x', 'has no valid host'), ('https://[fd00::1/x', 'has no valid host'),
    ('https://h:1:2/', 'has no valid host'),
    # file: is a path on the node
    ('file://mirror/srv/doca/', 'is not a file: URL of an absolute path on the node'),
    ('file:srv/doca', 'is not a file: URL of an absolute path'), ('file:', 'is not a file: URL of an absolute path'),
    # not a string
    ('', 'must be a non-empty string'), (None, 'must be a non-empty string'), (443, 'must be a non-empty string'),
])
def test_urls_that_cannot_be_trusted_or_break_a_file_are_refused_with_the_rule(url, rule):
    assert rule in url_problem(url)


def test_plain_http_passes_when_allowed_and_the_message_names_the_allowing_variable():
    assert url_problem('http://mirror.cluster.internal:8080/doca/', allow_http=True) is None
    assert url_problem('http://mirror/x', allow_http='yes') is None
    assert url_problem('http://mirror/x', allow_http='false').startswith("'http://mirror/x' is plain HTTP")
    assert url_problem('http://mirror/x', allow_variable='rdma_allow_http') == (
        "'http://mirror/x' is plain HTTP: what it serves could be replaced on the way; use https://, or set "
        "rdma_allow_http: true for a mirror on a private network without TLS")
    assert url_problem('http://mirror/x').endswith('use https://')
    # allowing http allows nothing else
    assert 'is not an http:// or https:// URL with a host' in url_problem('ftp://mirror/x', allow_http=True)
    assert 'has no valid host after http://' in url_problem('http://bad_host/x', allow_http=True)
    assert 'holds a blank' in url_problem('http://mirror/x\n[trusted=yes]', allow_http=True)
    with pytest.raises(TypeError):
        url_problem('http://mirror/x', allow_http='maybe')


@pytest.mark.parametrize('url', ['https://user:s3cret@mirror.example.com/doca/', 'https://token@mirror/x',
                                 'http://u:s3cret@mirror/x', 'ftp://u:s3cret@mirror/x', 'file://u@/srv/x',
                                 'https://u:s3cret@mirror/x\n', 'https://a@b:s3cret@mirror/x'])
def test_credentials_in_a_url_are_refused_without_being_repeated(url):
    problem = url_problem(url, allow_http=True)
    assert 'holds credentials (user@ before the host), which would be logged and written to files' in problem
    assert 's3cret' not in problem and 'user' not in problem.split('holds')[0]
    assert problem.startswith("'%s//***@" % url.split('//')[0])


def test_an_at_sign_after_the_host_is_no_credential():
    assert url_problem('https://mirror/pkgs/@latest/x.tbz') is None


# the FHS directories and the /etc directories the system reads by directory: never a role's own
@pytest.mark.parametrize('path', ['/etc', '/etc/profile.d', '/etc/ssh', '/etc/systemd', '/etc/systemd/system',
                                  '/etc/udev', '/etc/udev/rules.d', '/etc/sysctl.d', '/etc/modprobe.d', '/etc/security',
                                  '/etc/apt/sources.list.d', '/etc/yum.repos.d', '/usr', '/usr/bin', '/usr/lib',
                                  '/usr/local', '/usr/local/bin', '/usr/share', '/var', '/var/lib', '/var/log',
                                  '/var/tmp', '/boot', '/proc', '/sys', '/dev', '/run', '/bin', '/sbin', '/lib', '/lib64',
                                  '/opt', '/home', '/root', '/srv', '/mnt', '/media', '/usr/lib/systemd', '/lib/modules'])
def test_system_directories_are_never_a_role_s_own(path):
    assert path_problem(path) == ('%r is a system directory or under /proc, /sys or /dev, which the role would take '
                                  'over' % path)


@pytest.mark.parametrize('path', ['/etc/hpcfabric', '/etc/mpi', '/opt/hpcfabric', '/usr/local/lib/hpcfabric',
                                  '/var/lib/hpcfabric', '/home/mpiuser/bench', '/srv/hpcfabric'])
def test_a_role_s_directory_under_a_system_directory_passes(path):
    assert path_problem(path) is None and system_dir_problem(path) is None and system_dir_problem(path, mount=True) is None


@pytest.mark.parametrize('value, normal', [('/etc/', '/etc'), ('//usr', '/usr'), ('///usr//local/', '/usr/local'),
                                           ('/etc/./ssh', '/etc/ssh'), ('/data/../etc', '/etc'), ('/', '/'),
                                           ('//', '/')])
def test_paths_are_matched_as_the_kernel_resolves_them(value, normal):
    assert normal_path(value) == normal
    assert system_dir_problem(value) == ('%r is a system directory or under /proc, /sys or /dev, which the role would '
                                         'take over' % value)


@pytest.mark.parametrize('path', sorted(MOUNTABLE_SYSTEM_DIRS) + ['/home/', '//home', '/mnt/data', '/media/usb'])
def test_a_site_mounts_homes_and_shares_where_no_role_may_own_a_directory(path):
    assert system_dir_problem(path, mount=True) is None
    # /home itself stays refused as a role's own directory; what is under it (/mnt/data) is not a system directory
    assert (system_dir_problem(path) is not None) == (normal_path(path) in SYSTEM_DIRS)


@pytest.mark.parametrize('path', ['/', '/etc', '/etc/ssh/', '//usr', '/usr/local', '/opt', '/var/lib', '/var/tmp',
                                  '/tmp', '/boot', '/root', '/proc/fs', '/sys/fs/cgroup', '/dev/shm'])
def test_a_mount_over_a_system_directory_is_refused(path):
    assert system_dir_problem(path, mount=True) == (
        '%r is a system directory or under /proc, /sys or /dev: a mount over it would hide what the system keeps '
        'there' % path)


@pytest.mark.parametrize('path', ['/usr/local/lib/x%i', '/etc/hpcfabric/%H.json', '/opt/%%'])
def test_a_percent_sign_a_systemd_unit_would_expand_is_refused(path):
    assert 'systemd specifier (%)' in path_problem(path, owned=False)


@pytest.mark.parametrize('name', ['enp1s0f0|eth0', '!eth0', 'eth0!', 'a|b'])
def test_interface_names_that_widen_a_udev_or_networkd_match_are_refused(name):
    assert 'is not an interface name' in ifname_problem(name)


@pytest.mark.parametrize('host', ['leaf01', 'leaf01.mgmt.example.com', '10.10.0.201', '[2001:db8::201]', '[::1]'])
def test_url_hosts_pass(host):
    assert url_host_problem(host) is None


@pytest.mark.parametrize('host', ['leaf01#', 'leaf01?a=b', 'leaf01/x', 'user@leaf01', 'leaf01:443', 'leaf 01',
                                  'leaf01\n', '\tleaf01', '[2001:db8::201]:443', '[fe80::1%eth0]', 'leaf_01', '[leaf01]',
                                  '', None, 7])
def test_url_hosts_that_change_the_url_are_refused(host):
    assert url_host_problem(host)


def test_a_bare_ipv6_url_host_is_refused_saying_how_to_write_it():
    assert url_host_problem('2001:db8::201') == (
        "'2001:db8::201' is an IPv6 address without brackets: its colons would read as a port; write [2001:db8::201]")
