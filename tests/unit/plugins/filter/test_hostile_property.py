# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Random mutations of inventories/example through check_inventory.yml's filter: refused, or safe to render.

Each example changes one value of one example node (a string with line breaks, quotes, shell, Tcl or glob
characters inserted, another type, a number out of range) and asserts that ``inventory_problems``

- never raises: every refusal is a message;
- or, when it accepts the inventory, that what the roles would write from it is read back by the tool that reads it
  as exactly the values planned: /etc/hosts and known_hosts lines, /etc/fstab (written as ansible.posix.mount writes
  it, read by util-linux ``findmnt``), LNet's modprobe.d line, systemd-networkd and NetworkManager files and netplan YAML (the roles' own
  templates), the mpi role's profile.d script (sourced by ``bash``), modulefile (run by ``tclsh``) and MCA file,
  the roce_qos role's udev rule and systemd units (instances unescaped by ``systemd-escape``).

A switch of the example, mutated the same way, is refused or its ports are each one word of the Cumulus, EOS and SONiC
configuration and its NVUE address the host of the URL the role builds. Generated conflicts (a system directory
however written, a loopback fabric name, one MAC or one rail on two interfaces) are always refused, naming the host.

The hand-picked cases are in test_hostile_inventory.py. CI runs a fixed sample (``derandomize``); set
``HYPOTHESIS_PROFILE=explore`` for a larger random one.
"""
from __future__ import annotations

import configparser
import copy
import importlib.util
import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import jinja2
import pytest
import yaml
from ansible.plugins.filter.core import combine, comment, quote, to_nice_yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ansible_collections.ansible.posix.plugins.modules.mount import _escape_fstab
from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model
from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_links import resolve_interfaces
from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    MOUNTABLE_SYSTEM_DIRS, SYSTEM_DIRS, hostname_problem, tcl_quote)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_plan import LOCAL_NAMES
from ansible_collections.hpcfabric.cluster.plugins.module_utils.lnet import lnet_conf
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import mount_plan
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render as render_switch

ROOT = Path(__file__).resolve().parents[4]
# the example's nodes and the filter call, as the hand-picked table reads them
_SPEC = importlib.util.spec_from_file_location('test_hostile_inventory', Path(__file__).with_name('test_hostile_inventory.py'))
TABLE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(TABLE)
NODES, problems_of = TABLE.NODES, TABLE.problems_of

settings.register_profile('ci', max_examples=250, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('explore', max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'ci'))

# what a careless or hostile value is made of: the characters each file format or interpreter gives a meaning to
HOSTILE = ['\n', '\r', '\t', ' ', '"', "'", '$(id)', '`id`', ';', '#', '*', ',', '@', '\\', '[exec id]', '{', '}',
           '/', '..', '\x00', 'é', ':', '=', '&', '|', '%', '!', '-', '.', '0']
# and what a careless one is made of: the same value, a character longer
CARELESS = ['a', 'Z', '7', '_', '-', '.']
FRAGMENT = st.lists(st.sampled_from(HOSTILE + CARELESS), min_size=1, max_size=3).map(''.join)
OTHER_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.floats(allow_nan=True),
                         st.text(max_size=8), st.lists(st.text(max_size=6), max_size=3),
                         st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2))
# values the example leaves unset that reach files, each with a well-formed start to be spoiled
ADDED = {
    ('fabric_network_interfaces', 0, 'hostname'): 'b300-01-fast0',
    ('fabric_network_interfaces', 1, 'mac'): '58:a2:e1:00:00:01',
    ('fabric_network_interfaces', 2, 'routes'): [{'to': '10.200.0.0/16', 'via': '10.100.2.1'}],
    ('mpi_env_extra',): {'NCCL_DEBUG': 'WARN'},
    ('mpi_ucx_net_devices',): ['mlx5_0:1', 'mlx5_1:1'],
    ('mpi_mca_params_extra',): {'btl_tcp_if_include': 'ens1f0np0'},
    ('ssh_trust_authorized_from',): ['10.100.0.0/16'],
    ('storage_nfs_options',): 'nfsvers=4.2,hard',
    ('roce_qos_interfaces',): ['enp1as0np0', 'enp3cs0np0'],
    ('roce_qos_python',): '/usr/bin/python3',
    ('roce_qos_script_dir',): '/usr/local/lib/hpcfabric',
    ('roce_qos_config_path',): '/etc/hpcfabric/roce-qos.json',
}


def leaf_paths(value, path=()):
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in leaf_paths(item, path + (key,))]
    if isinstance(value, list) and value:
        return [p for index, item in enumerate(value) for p in leaf_paths(item, path + (index,))]
    return [path]


EXAMPLE = TABLE.example_hostvars()
PATHS = sorted(set(leaf_paths(EXAMPLE[NODES[0]])) | set(ADDED)
               | set(key + path for key, value in ADDED.items() for path in leaf_paths(value)), key=repr)


def get_at(value, path):
    for key in path:
        value = value[key]
    return value


def set_at(value, path, new):
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


@st.composite
def mutations(draw):
    """(host, path, new value) of one example node's variable: the old value with hostile fragments spliced in,
    or a value of another type."""
    host = draw(st.sampled_from(NODES))
    path = draw(st.sampled_from(PATHS))
    hostvars = copy.deepcopy(EXAMPLE)
    for added, value in ADDED.items():
        if path[:len(added)] == added:
            set_at(hostvars[host], added, copy.deepcopy(value))
    old = get_at(hostvars[host], path)
    # mostly the value itself, spoiled: another type is refused by the argument specs alone
    if isinstance(old, str) and draw(st.integers(0, 3)) > 0:
        at = draw(st.integers(0, len(old)))
        new = old[:at] + draw(FRAGMENT) + old[at:]
    else:
        new = draw(OTHER_VALUES)
    set_at(hostvars[host], path, new)
    return host, path, new, hostvars


def role_defaults(role):
    return yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text()) or {}


TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT / 'roles')), trim_blocks=True,
                               keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
TEMPLATES.filters.update({'comment': comment, 'quote': quote, 'combine': combine, 'to_nice_yaml': to_nice_yaml,
                          'hpcfabric.cluster.tcl_quote': tcl_quote, 'hpcfabric.cluster.lnet_config': lnet_conf})


def render(template, **variables):
    return TEMPLATES.get_template(template).render(ansible_managed='Ansible managed', **variables)


def run(argv, text):
    return subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60, check=False)


def check_hosts_and_known_hosts(model):
    for line in model['hosts_entries']:
        address, *names = line.split()
        assert line == ' '.join([address] + names) and len(line.splitlines()) == 1, line
        ipaddress.ip_address(address)
        assert names and [n for n in names if hostname_problem(n)] == [], line
    for host, node in model['nodes'].items():
        line = '%s ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample' % ','.join(node['known_hosts_names'])
        fields = line.split()
        assert len(fields) == 3 and fields[0].split(',') == node['known_hosts_names'], (host, line)
        for name in node['known_hosts_names']:
            assert not set(name) & set('*?!@[]'), (host, name)


def check_fstab(variables, tmp):
    defaults = role_defaults('storage')

    def setting(name):
        return variables[name] if variables.get(name) is not None else defaults[name]
    plan = mount_plan(setting('storage_mounts'), setting('storage_nfs_options'), setting('storage_lustre_options'),
                      'mounted', setting('storage_lustre_packages'), setting('storage_lnet_networks'),
                      setting('storage_lnet_ping_nids'))
    assert plan['problems'] == []
    # ansible.posix.mount's line: its own escaping, fields separated by one space
    fstab = ''.join('%s %s %s %s 0 0\n' % tuple(_escape_fstab(m[k]) for k in ('src', 'path', 'fstype', 'opts'))
                    for m in plan['mounts'])
    path = tmp / 'fstab'
    path.write_text(fstab)
    read = run(['findmnt', '--tab-file', str(path), '-J', '-o', 'SOURCE,TARGET,FSTYPE,OPTIONS'], '')
    assert read.returncode == (0 if plan['mounts'] else 1), read.stderr
    found = json.loads(read.stdout)['filesystems'] if plan['mounts'] else []
    assert [(f['source'], f['target'], f['fstype'], f['options']) for f in found] == [
        (m['src'], m['path'], m['fstype'], m['opts']) for m in plan['mounts']]


def check_lnet(variables):
    """modprobe.d: one options line whose networks= word is the inventory's list, as modprobe splits it; lnet.conf:
    YAML whose NIs are exactly the inventory's interfaces, and nothing else."""
    networks = variables.get('storage_lnet_networks', role_defaults('storage')['storage_lnet_networks'])
    if not networks:
        return
    lines = [line for line in render('storage/templates/lnet.conf.j2', storage_lnet_networks=networks).splitlines()
             if line and not line.startswith('#')]
    assert len(lines) == 1 and shlex.split(lines[0]) == ['options', 'lnet', 'networks=' + ','.join(networks)], lines
    conf = yaml.safe_load(render('storage/templates/lnet.yaml.j2', storage_lnet_networks=networks))
    assert list(conf) == ['net'], conf
    interfaces = [ni['interfaces'][0] for net in conf['net'] for ni in net['local NI(s)']]
    assert interfaces == [name for spec in networks for name in spec[spec.index('(') + 1:spec.index(')')].split(',')]


def parse_networkd(text):
    """(section, key, value) of a systemd .network file, as systemd's config parser splits it."""
    entries, section = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith(('#', ';')):
            continue
        if line.startswith('['):
            assert line.endswith(']') and line[1:-1] in ('Match', 'Link', 'Network', 'Route'), line
            section = line[1:-1]
            continue
        key, _sep, value = line.partition('=')
        assert _sep and key.isidentifier(), line
        entries.append((section, key, value))
    return entries


def check_network_files(variables, host):
    defaults = role_defaults('fabric_network')
    wanted = variables['fabric_network_interfaces']
    ip_links = [{'ifname': iface['name'], 'address': iface.get('mac') or '58:a2:e1:ff:00:%02x' % index,
                 'link_type': 'ether'} for index, iface in enumerate(wanted) if iface.get('name')]
    mtu = variables.get('fabric_network_mtu', defaults['fabric_network_mtu'])
    links = resolve_interfaces(wanted, json.dumps(ip_links), mtu)
    resolved = links['interfaces']
    for item in resolved:
        entries = parse_networkd(render('fabric_network/templates/networkd.network.j2', item=item))
        match = [(k, v) for s, k, v in entries if s == 'Match']
        assert match == ([('MACAddress', item['mac'].lower())] if item.get('mac') else [('Name', item['name'])])
        assert ('Network', 'Address', item['address']) in entries and ('Link', 'MTUBytes', str(item['mtu'])) in entries
        assert [(k, v) for s, k, v in entries if s == 'Route'] == [
            p for r in item['routes'] for p in (('Destination', r['to']), ('Gateway', r['via']))]
        keyfile = configparser.ConfigParser(interpolation=None, strict=True)
        keyfile.read_string(render('fabric_network/templates/networkmanager.nmconnection.j2', item=item,
                                   __fabric_network_file_prefix='60-hpcfabric-'))
        family = 'ipv6' if ':' in item['address'] else 'ipv4'
        assert (keyfile['connection']['interface-name'], keyfile[family]['address1'], keyfile['ethernet']['mtu']) \
            == (item['name'], item['address'], str(item['mtu'])), host
    netplan = yaml.safe_load(render('fabric_network/templates/netplan.yaml.j2', __fabric_network_links=links))
    ethernets = netplan['network']['ethernets']
    assert sorted(ethernets) == sorted(item['name'] for item in resolved)
    for item in resolved:
        entry = ethernets[item['name']]
        assert (entry['addresses'], entry['mtu'], entry.get('match'), entry.get('routes', [])) == (
            [item['address']], item['mtu'], {'macaddress': item['mac'].lower()} if item.get('mac') else None,
            [{'to': r['to'], 'via': r['via']} for r in item['routes']])


def mpi_template_variables(variables, job_env):
    defaults = role_defaults('mpi')
    prefix = '/opt/hpcfabric/mpi-test'
    return {'mpi_flavour': 'source', '__mpi_mpi4py_python': None, '__mpi_prefix': prefix, '__mpi_hpcx_home': prefix,
            '__mpi_bin_dirs': [prefix + '/bin'], '__mpi_lib_dirs': [prefix + '/lib'],
            '__mpi_env_vars': {'MPI_HOME': prefix}, '__mpi_job_env': job_env,
            'mpi_mca_params': variables.get('mpi_mca_params') or defaults['mpi_mca_params'],
            'mpi_mca_params_extra': variables.get('mpi_mca_params_extra') or {},
            'mpi_ucc': variables.get('mpi_ucc', defaults['mpi_ucc'])}


def check_mpi_files(variables, job_env):
    values = mpi_template_variables(variables, job_env)
    expected = dict(values['__mpi_env_vars'], **job_env)
    script = render('mpi/templates/mpi-env.sh.j2', **values)
    assert run(['bash', '-n'], script).returncode == 0, script
    sourced = run(['env', '-i', 'bash', '--norc', '--noprofile', '-c', 'eval "$(cat)" && env -0'], script)
    assert sourced.returncode == 0, sourced.stderr
    env = dict(item.split('=', 1) for item in sourced.stdout.split('\0') if '=' in item)
    assert dict((k, env.get(k)) for k in expected) == expected
    # the modulefile, with Environment Modules' commands as procs that print what they were given
    tcl = ('proc setenv {k v} {puts -nonewline "$k=$v\\0"}\nproc prepend-path {k v} {}\nproc module-whatis {t} {}\n'
           'proc conflict {args} {}\nproc module {args} {}\n'
           + render('mpi/templates/modulefile.j2', **values))
    ran = run([shutil.which('tclsh') or 'tclsh'], tcl)
    assert ran.returncode == 0, ran.stderr
    assert dict(item.split('=', 1) for item in ran.stdout.split('\0') if item) == expected
    # Open MPI's MCA file: one "name = value" per parameter, the job environment as one ;-separated list
    lines = [line for line in render('mpi/templates/mca-params.conf.j2', **values).splitlines()
             if line and not line.startswith('#')]
    params = dict({'coll_ucc_enable': 1, 'coll_ucc_priority': 100} if values['mpi_ucc'] else {},
                  **dict(values['mpi_mca_params'], **values['mpi_mca_params_extra']))
    assert len(lines) == len(params) + (1 if job_env else 0), lines
    parsed = dict(line.split(' = ', 1) for line in lines)
    assert dict((k, parsed[k]) for k in params) == dict((k, str(v)) for k, v in params.items())
    if job_env:
        assert dict(item.split('=', 1) for item in parsed['mca_base_env_list'].split(';')) == job_env


@given(mutations())
def test_a_mutated_example_is_refused_with_a_message_or_renders_files_that_read_back(tmp_path_factory, mutation):
    host, path, new, hostvars = mutation
    # never a traceback: a refusal is a list of messages
    problems = problems_of(hostvars)
    assert all(isinstance(p, str) and p for p in problems)
    event('refused' if problems else 'rendered')
    if problems:
        return
    model = build_model(hostvars, NODES)
    assert model['problems'] == []
    check_hosts_and_known_hosts(model)
    tmp = tmp_path_factory.mktemp('render')
    check_fstab(hostvars[host], tmp)
    check_lnet(hostvars[host])
    check_network_files(hostvars[host], host)
    check_mpi_files(hostvars[host], model['nodes'][host]['job_env'])
    check_roce_units(hostvars[host], [i['name'] for i in model['nodes'][host]['interfaces'] if i['name']])


def check_roce_units(variables, model_interfaces):
    """The roce_qos role's udev rule: one line whose KERNEL match lists exactly the interfaces, each started as an
    instance whose %I (as systemd unescapes it) is the interface; its units: one ExecStart whose words are the
    interpreter, the script, its arguments and the configuration file, with no specifier but %I."""
    defaults = role_defaults('roce_qos')

    def setting(name):
        return variables[name] if variables.get(name) is not None else defaults[name]
    interfaces = setting('roce_qos_interfaces')
    interfaces = model_interfaces if interfaces is None else interfaces
    rules = [line for line in render('roce_qos/templates/70-hpcfabric-roce-qos.rules.j2',
                                     __roce_qos_interfaces=interfaces).splitlines() if line and not line.startswith('#')]
    match = re.fullmatch(r'ACTION=="add", SUBSYSTEM=="net", KERNEL=="([^"]*)", TAG\+="systemd", '
                         r'PROGRAM="/usr/bin/systemd-escape --template=hpcfabric-roce-qos@\.service %k", '
                         r'ENV\{SYSTEMD_WANTS\}\+="%c"', rules[0]) if len(rules) == 1 else None
    assert match and match.group(1).split('|') == interfaces, rules
    if shutil.which('systemd-escape') and interfaces:
        # the instance udev asks for, as systemd reads it back (%I)
        units = [run(['systemd-escape', '--template=hpcfabric-roce-qos@.service', name], '').stdout.strip()
                 for name in interfaces]
        instances = [unit[len('hpcfabric-roce-qos@'):-len('.service')] for unit in units]
        unescaped = run(['systemd-escape', '--unescape'] + instances, '')
        assert unescaped.stdout.split() == interfaces, unescaped
    script = [setting('roce_qos_python'), setting('roce_qos_script_dir') + '/roce_qos_apply.py', 'apply', '--config',
              setting('roce_qos_config_path')]
    for unit, extra in (('hpcfabric-roce-qos.service.j2', []), ('hpcfabric-roce-qos@.service.j2', ['--interface', '%I'])):
        text = render('roce_qos/templates/' + unit, **dict((name, setting(name)) for name in (
            'roce_qos_python', 'roce_qos_script_dir', 'roce_qos_config_path')))
        starts = [line for line in text.splitlines() if line.startswith('ExecStart=')]
        assert len(starts) == 1 and starts[0][len('ExecStart='):].split(' ') == script + extra, starts
        assert [line for line in text.splitlines() if '%' in line and '%I' not in line and '%i' not in line] == []


# a quarter of the profile's examples each: every one runs the whole inventory check (about half a second)
FEWER = settings(max_examples=max(settings.default.max_examples // 4, 1))
# values check_inventory must refuse whatever else the inventory holds: system directories however written, names of
# the loopback, one MAC or one rail for two interfaces
SPELLINGS = st.sampled_from(['{}', '{}/', '/{}', '{}/.', '/{}//'])
OWNED = st.sampled_from(sorted(SYSTEM_DIRS - {'/'}))
MOUNTED = st.sampled_from(sorted(SYSTEM_DIRS - MOUNTABLE_SYSTEM_DIRS - {'/'}))


@st.composite
def conflicts(draw):
    """(host, the start of the message that must be among the problems, hostvars) of one conflict in the example."""
    host = draw(st.sampled_from(NODES))
    other = NODES[1 - NODES.index(host)]
    hostvars = copy.deepcopy(EXAMPLE)
    ifaces = hostvars[host]['fabric_network_interfaces']
    i, j = draw(st.permutations(range(len(ifaces))))[:2]
    kind = draw(st.sampled_from(['owned', 'mount', 'local', 'mac', 'mac across', 'rail']))
    if kind == 'owned':
        hostvars[host]['roce_qos_script_dir'] = draw(OWNED)
        return host, 'roce_qos_script_dir on %s:' % host, hostvars
    if kind == 'mount':
        path = draw(SPELLINGS).format(draw(MOUNTED)).replace('/.', '/')
        hostvars[host]['storage_mounts'][0]['path'] = path
        return host, 'storage_mounts on %s: [0].path %r is a system directory' % (host, path), hostvars
    if kind == 'local':
        name = draw(st.sampled_from(sorted(LOCAL_NAMES) + ['rail%d.localhost' % i, 'LOCALHOST']))
        ifaces[i]['hostname'] = name
        return host, 'fabric_network_interfaces[%d].hostname on %s: fabric hostname' % (i, host), hostvars
    mac = '58:a2:e1:%02x:00:%02x' % (NODES.index(host), i)
    ifaces[i]['mac'] = mac
    if kind == 'mac':
        ifaces[j]['mac'] = draw(st.sampled_from([mac, mac.upper()]))
        return host, 'fabric_network_interfaces[%d].mac on %s:' % (max(i, j), host), hostvars
    if kind == 'mac across':
        hostvars[other]['fabric_network_interfaces'][j]['mac'] = mac
        return None, '.mac on %s: %s is also the MAC of' % (NODES[1], mac), hostvars
    ifaces[j]['rail'] = ifaces[i]['rail']
    return host, 'fabric_network_interfaces[%d].rail on %s: rail %d already has' % (max(i, j), host, ifaces[i]['rail']), \
        hostvars


@FEWER
@given(conflicts())
def test_an_identity_conflict_or_a_system_directory_is_always_refused_naming_the_host(conflict):
    _host, expected, hostvars = conflict
    problems = problems_of(hostvars)
    assert any(expected in p for p in problems), (expected, problems)


SWITCH_EXAMPLE = TABLE.example_switch_hostvars()
for _switch in TABLE.SWITCHES:
    # set as the role's default resolves it, so that the check sees the address the URL is built from
    SWITCH_EXAMPLE[_switch]['switch_qos_nvue_host'] = SWITCH_EXAMPLE[_switch]['ansible_host']
SWITCH_PATHS = [('switch_qos_ports', i) for i in range(8)] + [('switch_qos_nvue_host',), ('switch_qos_nvue_user',)]


@st.composite
def switch_mutations(draw):
    """A switch of the example with one of its strings spoiled by hostile fragments."""
    host = draw(st.sampled_from(TABLE.SWITCHES))
    path = draw(st.sampled_from(SWITCH_PATHS))
    hostvars = copy.deepcopy(SWITCH_EXAMPLE)
    old = get_at(hostvars[host], path)
    at = draw(st.integers(0, len(old)))
    set_at(hostvars[host], path, old[:at] + draw(FRAGMENT) + old[at:])
    return host, hostvars


@FEWER
@given(switch_mutations())
def test_a_mutated_switch_is_refused_or_its_configuration_and_url_read_back(mutation):
    """Accepted ports are each one word of an nv set command, one EOS interface line, one CONFIG_DB key; an accepted
    NVUE address is the host of the URL the role builds from it, with no path, query, fragment or user before it."""
    host, hostvars = mutation
    problems = TABLE.switch_problems_of(hostvars)
    assert all(isinstance(p, str) and p for p in problems)
    event('refused' if problems else 'rendered')
    if problems:
        return
    variables = hostvars[host]
    ports = variables['switch_qos_ports']
    eos = render_switch('eos', {}, ports)['text'].splitlines()
    assert [line for line in eos if line.startswith('interface ')] == ['interface %s' % port for port in ports]
    nvue = [line.split(' ') for line in render_switch('cumulus', {}, ports)['text'].splitlines()
            if line.startswith('nv set interface ')]
    assert sorted(set(words[3] for words in nvue)) == sorted(ports) and all(len(words) == 7 for words in nvue), nvue
    sonic = json.loads(render_switch('sonic', {}, ports)['text'])
    assert sorted(sonic['PORT_QOS_MAP']) == sorted(ports)
    nvue_port = role_defaults('switch_qos')['switch_qos_nvue_port']
    url = urlsplit('https://%s:%s/nvue_v1' % (variables['switch_qos_nvue_host'], nvue_port))
    assert (url.hostname, url.port, url.path, url.query, url.fragment, url.username) == (
        variables['switch_qos_nvue_host'].strip('[]').lower(), nvue_port, '/nvue_v1', '', '', None)


def test_the_read_back_catches_a_sink_that_does_not_quote(monkeypatch):
    """The property's checks can fail: with profile.d's old double quotes, the value's command runs when sourced."""
    check_mpi_files({}, {'A': '$(echo injected)'})
    monkeypatch.setitem(TEMPLATES.filters, 'quote', lambda value: '"%s"' % value)
    with pytest.raises(AssertionError, match='injected'):
        check_mpi_files({}, {'A': '$(echo injected)'})
