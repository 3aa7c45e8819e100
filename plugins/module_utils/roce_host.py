# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Host side of the lossless RoCE policy: find the RoCE NICs, apply the policy, read it back.

This file uses the standard library and the collection's sysfs reader (ib_sysfs.py, ibstat.py) only. The
``hpcfabric.cluster.roce_host_qos`` module imports it, and the ``roce_qos`` role also installs the three files on
each node next to ``roce_qos_apply.py``, which a systemd
oneshot runs at boot because none of these settings survive a reboot or a driver reload.

Backends: ``mlnx_qos`` (mlnx-tools, shipped with DOCA/MLNX_OFED) and the inbox ``dcb`` (iproute2).
Besides the backend it writes the RDMA-CM defaults in configfs
(``/sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_tos`` and ``default_roce_mode``) and the
per-priority ECN switches ``/sys/class/net/<if>/ecn/roce_{np,rp}/enable/<prio>`` where the driver
has them. The policy is the resolved ``roce_qos_policy`` (see roce_policy.py); priority N is carried
by traffic class N.
"""
from __future__ import annotations

import os
import re
import socket

try:
    from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import roce_v2_gid_index
except ImportError:  # the boot-time copy, installed beside ib_sysfs.py by the roce_qos role
    from ib_sysfs import roce_v2_gid_index

ROCE_V2 = 'RoCE v2'
ECN_SIDES = ('roce_np', 'roce_rp')
BACKENDS = ('mlnx_qos', 'dcb')
ECT0 = 2


class HostError(Exception):
    """A setting could not be read or applied; the message names the command or file."""


class ParseError(HostError):
    """Command output that cannot be read; the message names the command and the line."""

    def __init__(self, command, line, reason):
        super(ParseError, self).__init__('%s: cannot parse %r (%s)' % (command, line, reason))


def traffic_class(policy):
    """The IP ToS byte RoCE traffic carries: DSCP in the upper six bits, ECT(0) in the ECN field.

    The one definition: it lives here because the roce_host_qos module and the boot-time script ship this file to
    the nodes, and the cluster model imports it for the jobs' UCX_IB_TRAFFIC_CLASS and NCCL_IB_TC.
    """
    return (policy['roce']['dscp'] << 2) | ECT0


def desired_qos(policy):
    """NIC QoS state the policy asks for, in the form the parsers return."""
    strict = policy['ets']['strict_classes']
    return {
        'trust': policy['trust'],
        'dscp2prio': {policy['roce']['dscp']: [policy['roce']['priority']], policy['cnp']['dscp']: [policy['cnp']['priority']]},
        'pfc': sorted(policy['pfc']['priorities']),
        'prio_tc': list(range(8)),
        'tsa': dict((tc, 'strict' if tc in strict else 'ets') for tc in range(8)),
        'tcbw': dict((tc, policy['ets']['bandwidth_percent'][tc]) for tc in range(8) if tc not in strict),
    }


def _fmt(values):
    return '[%s]' % ','.join(str(value) for value in values)


# --- recorded output parsers -----------------------------------------------------------------------

_MLNX = {
    'trust': re.compile(r'^Priority trust state:\s*(\S+)'),
    'dscp_header': re.compile(r'^dscp2prio mapping:'),
    'dscp': re.compile(r'^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$'),
    'pfc_header': re.compile(r'^PFC configuration:'),
    'pfc_enabled': re.compile(r'^enabled((?:\s+\d)+)\s*$'),
    'tc': re.compile(r'^tc:\s*(\d+)\s+ratelimit:\s*[^,]*,\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?'),
    'tc_priority': re.compile(r'^priority:\s*(\d+)$'),
}
_MLNX_IGNORED = re.compile(r'^(DCBX mode:|default priority:|Receive buffer size|Cable len:|priority(\s+\d)+\s*$|buffer(\s+\d)+\s*$'
                           r'|Buffers commands are not supported|\*+ ?WARNING|prio:\d+\s*$)')


def empty_state():
    return {'trust': None, 'dscp2prio': None, 'pfc': None, 'prio_tc': None, 'tsa': {}, 'tcbw': {}}


def parse_mlnx_qos(text, command='mlnx_qos'):
    """Parse `mlnx_qos -i IF` output into a QoS state; return (state, warnings).

    Lines the parser does not know are reported as warnings; output with no known line at all
    raises ParseError naming the first line.
    """
    state = empty_state()
    warnings = []
    prio_tc = {}
    current_tc = None
    known = False
    first = None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line:
            continue
        first = first or line
        match = _match_mlnx(line)
        if match is None:
            warnings.append('%s: ignored unexpected line %r' % (command, line))
            continue
        known = True
        kind, groups = match
        if kind == 'trust':
            state['trust'] = groups[0]
        elif kind == 'dscp_header':
            state['dscp2prio'] = {}
        elif kind == 'dscp':
            _add_dscp(state, int(groups[0]), groups[1])
        elif kind == 'pfc_enabled':
            state['pfc'] = _pfc_bits(groups[0].split(), command, warnings)
        elif kind == 'tc':
            current_tc = int(groups[0])
            state['tsa'][current_tc] = groups[1]
            if groups[2] is not None:
                state['tcbw'][current_tc] = int(groups[2])
        elif kind == 'tc_priority':
            if current_tc is None:
                raise ParseError(command, line, 'priority listed before any "tc:" line')
            prio_tc[int(groups[0])] = current_tc
    if not known:
        raise ParseError(command, first or '', 'no mlnx_qos report in the output')
    state['prio_tc'] = _prio_tc_list(prio_tc, command, warnings)
    _warn_missing(state, command, warnings)
    return state, warnings


def _match_mlnx(line):
    for kind, pattern in _MLNX.items():
        match = pattern.match(line)
        if match:
            return kind, match.groups()
    if _MLNX_IGNORED.match(line):
        return 'ignored', ()
    return None


def _add_dscp(state, prio, values):
    if state['dscp2prio'] is None:
        state['dscp2prio'] = {}
    for dscp in (value for value in values.replace(' ', '').split(',') if value):
        state['dscp2prio'].setdefault(int(dscp), []).append(prio)


def _pfc_bits(bits, command, warnings):
    if len(bits) != 8:
        warnings.append('%s: PFC "enabled" row has %d values instead of 8' % (command, len(bits)))
    return [prio for prio, bit in enumerate(bits) if bit == '1']


def _prio_tc_list(prio_tc, command, warnings):
    if not prio_tc:
        return None
    missing = [prio for prio in range(8) if prio not in prio_tc]
    if missing:
        warnings.append('%s: no traffic class listed for priorities %s' % (command, _fmt(missing)))
    return [prio_tc.get(prio) for prio in range(8)]


def _warn_missing(state, command, warnings):
    if state['pfc'] is None:
        warnings.append('%s: no PFC configuration in the output (truncated?)' % command)
    if not state['tsa']:
        warnings.append('%s: no traffic class lines in the output (truncated?); ETS not checked' % command)


_DCB_SCALARS = ('pfc-cap', 'macsec-bypass', 'delay', 'willing', 'ets-cap', 'cbs', 'total-size')
_DCB_MAPS = ('prio-pfc', 'dscp-prio', 'prio-tc', 'tc-tsa', 'tc-bw', 'pg-bw', 'reco-tc-tsa', 'reco-tc-bw', 'reco-prio-tc',
             'requests', 'indications', 'pcp-prio', 'default-prio', 'ethtype-prio', 'stream-port-prio', 'dgram-port-prio',
             'port-prio', 'prio-buffer', 'buffer-size')
_DSCP_NAME = re.compile(r'^(?:CS([0-7])|AF([1-4])([1-3])|(EF)|(default))$', re.IGNORECASE)


def dscp_value(token, command='dcb'):
    """A DSCP as `dcb app show` prints it: a number, or an rt_dsfield name (CS3, AF31, EF)."""
    if token.isdigit():
        return int(token)
    match = _DSCP_NAME.match(token)
    if not match:
        raise ParseError(command, token, 'unknown DSCP name')
    cs, af_class, af_drop, ef, default = match.groups()
    if cs is not None:
        return int(cs) * 8
    if af_class is not None:
        return int(af_class) * 8 + int(af_drop) * 2
    return 46 if ef else 0


def parse_dcb(text, command='dcb'):
    """Parse `dcb app show`, `dcb pfc show` and `dcb ets show` output (one text or several joined).

    Returns (state, warnings). Every line is a keyword followed by values or KEY:VALUE pairs;
    a line that is not (an error message, say) raises ParseError naming it.
    """
    maps = {}
    for line in (raw.strip() for raw in text.splitlines()):
        if line:
            _parse_dcb_line(line, maps, command)
    state = empty_state()
    warnings = []
    if 'dscp-prio' in maps:
        state['dscp2prio'] = {}
        for key, prio in maps['dscp-prio']:
            state['dscp2prio'].setdefault(dscp_value(key, command), []).append(_int(prio, command))
        # mlx5 switches to DSCP trust as soon as the APP table holds a DSCP entry, and back when it is empty
        state['trust'] = 'dscp' if state['dscp2prio'] else 'pcp'
    if 'prio-pfc' in maps:
        state['pfc'] = sorted(_int(prio, command) for prio, value in maps['prio-pfc'] if value == 'on')
    if 'prio-tc' in maps:
        prio_tc = dict((_int(prio, command), _int(tc, command)) for prio, tc in maps['prio-tc'])
        state['prio_tc'] = _prio_tc_list(prio_tc, command, warnings)
    state['tsa'] = dict((_int(tc, command), tsa) for tc, tsa in maps.get('tc-tsa', []))
    state['tcbw'] = dict((_int(tc, command), _int(bw, command)) for tc, bw in maps.get('tc-bw', []))
    _warn_missing(state, command, warnings)
    return state, warnings


def _parse_dcb_line(line, maps, command):
    tokens = line.split()
    key = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _DCB_SCALARS:
            index += 2
            continue
        if token in _DCB_MAPS:
            key = token
            maps.setdefault(key, [])
        elif key is not None and ':' in token and token.split(':', 1)[1]:
            maps[key].append(tuple(token.split(':', 1)))
        elif key == 'default-prio' and token.isdigit():
            maps[key].append((token, token))
        else:
            raise ParseError(command, line, 'unexpected %r' % token)
        index += 1


def _int(value, command):
    try:
        return int(value)
    except ValueError:
        raise ParseError(command, value, 'not a number')


def compare_qos(current, desired):
    """Messages for every known setting that differs from the policy ("PFC enabled on [3,4], policy [3]")."""
    diffs = []
    if current['trust'] is None:
        diffs.append('priority trust state unreadable, policy %s' % desired['trust'])
    elif current['trust'] != desired['trust']:
        diffs.append('trust %s, policy %s' % (current['trust'], desired['trust']))
    diffs.extend(_compare_dscp(current, desired))
    if current['pfc'] is None:
        diffs.append('PFC state unreadable, policy %s' % _fmt(desired['pfc']))
    elif sorted(current['pfc']) != desired['pfc']:
        diffs.append('PFC enabled on %s, policy %s' % (_fmt(sorted(current['pfc'])), _fmt(desired['pfc'])))
    if current['prio_tc'] is not None and current['prio_tc'] != desired['prio_tc']:
        diffs.append('priority to traffic class map %s, policy %s'
                     % (_fmt('?' if tc is None else tc for tc in current['prio_tc']), _fmt(desired['prio_tc'])))
    for tc in sorted(current['tsa']):
        if current['tsa'][tc] != desired['tsa'][tc]:
            diffs.append('traffic class %d uses %s, policy %s' % (tc, current['tsa'][tc], desired['tsa'][tc]))
        elif tc in desired['tcbw'] and current['tcbw'].get(tc) != desired['tcbw'][tc]:
            diffs.append('traffic class %d ETS share %s%%, policy %d%%' % (tc, current['tcbw'].get(tc, '?'), desired['tcbw'][tc]))
    return diffs


def _compare_dscp(current, desired):
    if current['dscp2prio'] is None:
        # mlnx_qos prints no DSCP map under PCP trust; the trust difference already says why
        return [] if current['trust'] not in (None, desired['trust']) else ['DSCP to priority map unreadable']
    diffs = []
    for dscp in sorted(desired['dscp2prio']):
        want = desired['dscp2prio'][dscp]
        have = sorted(current['dscp2prio'].get(dscp, []))
        if not have:
            diffs.append('DSCP %d has no priority, policy %d' % (dscp, want[0]))
        elif have != want:
            diffs.append('DSCP %d maps to priority %s, policy %d' % (dscp, ','.join(map(str, have)), want[0]))
    return diffs


# --- backends ----------------------------------------------------------------------------------------

class MlnxQos(object):
    """mlnx_qos from mlnx-tools: reads and writes through dcbnl (and mlx5 sysfs where present)."""

    name = 'mlnx_qos'

    def __init__(self, path, run):
        self.path = path
        self.run = run

    def read(self, ifname):
        return parse_mlnx_qos(_checked(self.run, [self.path, '-i', ifname]), 'mlnx_qos -i %s' % ifname)

    def plan(self, ifname, current, desired):
        options = []
        if current['trust'] != desired['trust']:
            options += ['--trust', desired['trust']]
        if current['pfc'] is None or sorted(current['pfc']) != desired['pfc']:
            options += ['--pfc', ','.join('1' if prio in desired['pfc'] else '0' for prio in range(8))]
        if current['prio_tc'] != desired['prio_tc']:
            options += ['--prio_tc', ','.join(str(tc) for tc in desired['prio_tc'])]
        if _ets_differs(current, desired):
            options += ['--tsa', ','.join(desired['tsa'][tc] for tc in range(8)),
                        '--tcbw', ','.join(str(desired['tcbw'].get(tc, 0)) for tc in range(8))]
        commands = [[self.path, '-i', ifname] + options] if options else []
        # mlnx_qos refuses --trust and --dscp2prio in one call, so the map is a second command
        sets = []
        for dscp in sorted(desired['dscp2prio']):
            if sorted((current['dscp2prio'] or {}).get(dscp, [])) != desired['dscp2prio'][dscp]:
                sets += ['--dscp2prio', 'set,%d,%d' % (dscp, desired['dscp2prio'][dscp][0])]
        if sets:
            commands.append([self.path, '-i', ifname] + sets)
        return commands


class Dcb(object):
    """The inbox `dcb` tool from iproute2 (kernel DCB netlink)."""

    name = 'dcb'

    def __init__(self, path, run):
        self.path = path
        self.run = run

    def read(self, ifname):
        app = _checked(self.run, [self.path, '-N', 'app', 'show', 'dev', ifname, 'dscp-prio'])
        pfc = _checked(self.run, [self.path, 'pfc', 'show', 'dev', ifname])
        ets = _checked(self.run, [self.path, 'ets', 'show', 'dev', ifname, 'prio-tc', 'tc-tsa', 'tc-bw'])
        # an empty APP table prints nothing at all
        text = (app if app.strip() else 'dscp-prio\n') + pfc + ets
        return parse_dcb(text, 'dcb (%s)' % ifname)

    def plan(self, ifname, current, desired):
        commands = []
        if _compare_dscp(current, desired) or current['trust'] != desired['trust']:
            entries = ['%d:%d' % (dscp, desired['dscp2prio'][dscp][0]) for dscp in sorted(desired['dscp2prio'])]
            commands.append([self.path, 'app', 'replace', 'dev', ifname, 'dscp-prio'] + entries)
        if current['pfc'] is None or sorted(current['pfc']) != desired['pfc']:
            commands.append([self.path, 'pfc', 'set', 'dev', ifname, 'prio-pfc']
                            + ['%d:%s' % (prio, 'on' if prio in desired['pfc'] else 'off') for prio in range(8)])
        if current['prio_tc'] != desired['prio_tc'] or _ets_differs(current, desired):
            commands.append([self.path, 'ets', 'set', 'dev', ifname, 'prio-tc']
                            + ['%d:%d' % (prio, tc) for prio, tc in enumerate(desired['prio_tc'])]
                            + ['tc-tsa'] + ['%d:%s' % (tc, desired['tsa'][tc]) for tc in range(8)]
                            + ['tc-bw'] + ['%d:%d' % (tc, desired['tcbw'].get(tc, 0)) for tc in range(8)])
        return commands


def _ets_differs(current, desired):
    if len(current['tsa']) < 8:
        return True
    return any(current['tsa'][tc] != desired['tsa'][tc] or current['tcbw'].get(tc, 0) != desired['tcbw'].get(tc, 0)
               for tc in range(8))


def _checked(run, argv):
    rc, out, err = run(argv)
    if rc != 0:
        detail = (err or out or '').strip().splitlines()
        raise HostError('%s failed (rc %d): %s' % (' '.join(argv), rc, detail[-1] if detail else 'no output'))
    return out


def guess_backend(text):
    """Which tool printed a saved read-back: mlnx_qos reports have a "PFC configuration:" section."""
    return 'mlnx_qos' if 'PFC configuration:' in text or 'Priority trust state' in text else 'dcb'


# --- sysfs and configfs --------------------------------------------------------------------------------

def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, IOError):
        return None


def _numeric_entries(path):
    try:
        return sorted((name for name in os.listdir(path) if name.isdigit()), key=int)
    except OSError:
        return []


def detect_nic(sysfs_root, name):
    """What sysfs says about one fabric interface: RDMA device, port, link layer, RoCE v2 GID, MTU."""
    net = os.path.join(sysfs_root, 'class', 'net', name)
    nic = {'name': name, 'present': os.path.isdir(net), 'rdma_capable': False, 'ibdev': None, 'port': None,
           'link_layer': None, 'gid_index': None, 'mtu': None, 'reason': None}
    if not nic['present']:
        nic['reason'] = 'no such network interface'
        return nic
    mtu = _read(os.path.join(net, 'mtu'))
    nic['mtu'] = int(mtu) if mtu and mtu.isdigit() else None
    try:
        ibdevs = sorted(os.listdir(os.path.join(net, 'device', 'infiniband')))
    except OSError:
        ibdevs = []
    if not ibdevs:
        nic['reason'] = 'no RDMA device (%s/device/infiniband is missing)' % net
        return nic
    nic['ibdev'] = ibdevs[0]
    nic['port'] = _find_port(sysfs_root, nic['ibdev'], name, net)
    port_dir = os.path.join(sysfs_root, 'class', 'infiniband', nic['ibdev'], 'ports', str(nic['port']))
    nic['link_layer'] = _read(os.path.join(port_dir, 'link_layer'))
    if nic['link_layer'] != 'Ethernet':
        nic['reason'] = 'link layer is %s, not Ethernet (RoCE)' % (nic['link_layer'] or 'unknown')
        return nic
    nic['rdma_capable'] = True
    nic['gid_index'] = roce_v2_gid_index(port_dir, name)
    return nic


def _find_port(sysfs_root, ibdev, name, net):
    ports_dir = os.path.join(sysfs_root, 'class', 'infiniband', ibdev, 'ports')
    ports = _numeric_entries(ports_dir)
    for port in ports:
        ndevs = os.path.join(ports_dir, port, 'gid_attrs', 'ndevs')
        if any(_read(os.path.join(ndevs, index)) == name for index in _numeric_entries(ndevs)):
            return int(port)
    dev_port = _read(os.path.join(net, 'dev_port'))
    if dev_port and dev_port.isdigit() and str(int(dev_port) + 1) in ports:
        return int(dev_port) + 1
    return int(ports[0]) if ports else 1


def plan_ecn(sysfs_root, ifname, policy):
    """(actions, changes, found) for the OFED per-priority ECN switches and the CNP marking."""
    base = os.path.join(sysfs_root, 'class', 'net', ifname, 'ecn')
    wanted = []
    for side in ECN_SIDES:
        wanted.append((os.path.join(base, side, 'enable', str(policy['roce']['priority'])), '1',
                       'ECN %s on priority %d' % (side, policy['roce']['priority'])))
    wanted.append((os.path.join(base, 'roce_np', 'cnp_dscp'), str(policy['cnp']['dscp']), 'CNP DSCP'))
    wanted.append((os.path.join(base, 'roce_np', 'cnp_802p_prio'), str(policy['cnp']['priority']), 'CNP priority'))
    return _plan_writes(wanted)


def _plan_writes(wanted):
    actions, changes, found = [], [], False
    for path, value, what in wanted:
        current = _read(path)
        if current is None:
            continue
        found = True
        if current != value:
            actions.append(('write', path, value))
            changes.append('%s %s, policy %s' % (what, current, value))
    return actions, changes, found


def plan_rdma_cm(configfs_root, nic, policy):
    """(actions, changes) for the RDMA-CM default ToS and RoCE mode of the NIC's port.

    Raises HostError when the rdma_cm configfs tree is missing (module not loaded or configfs not mounted).
    """
    root = os.path.join(configfs_root, 'rdma_cm')
    if not os.path.isdir(root):
        raise HostError('%s is missing: load rdma_cm (modprobe rdma_cm) and mount configfs on %s' % (root, configfs_root))
    device = os.path.join(root, nic['ibdev'])
    port = os.path.join(device, 'ports', str(nic['port']))
    wanted = [(os.path.join(port, 'default_roce_mode'), ROCE_V2, 'RDMA-CM default RoCE mode'),
              (os.path.join(port, 'default_roce_tos'), str(traffic_class(policy)), 'RDMA-CM default ToS')]
    if not os.path.isdir(device):
        # creating the device directory makes the kernel populate ports/<n>/ with its defaults
        return ([('mkdir', device)] + [('write', path, value) for path, value, _what in wanted],
                ['%s unset (no %s), policy %s' % (what, device, value) for _path, value, what in wanted])
    actions, changes, _found = _plan_writes(wanted)
    missing = [what for path, _value, what in wanted if _read(path) is None]
    if missing:
        raise HostError('%s has no readable %s' % (port, ' or '.join(missing)))
    return actions, changes


# --- orchestration -------------------------------------------------------------------------------------

class RoceHost(object):
    """Detect, plan, apply and verify the policy on this host's fabric NICs.

    ``config``: ``{policy, interfaces, backend: auto|mlnx_qos|dcb, ecn: bool, rdma_cm: bool}`` with a
    resolved policy. ``run(argv) -> (rc, stdout, stderr)`` and ``which(name) -> path | None`` come from
    the caller: the Ansible module's run_command and get_bin_path, or the boot-time script's subprocess.
    """

    def __init__(self, config, run, which, sysfs_root='/sys', configfs_root='/sys/kernel/config', host=None):
        self.policy = config['policy']
        self.interfaces = list(config['interfaces'])
        self.backend_choice = config.get('backend', 'auto')
        self.ecn = config.get('ecn', True)
        self.rdma_cm = config.get('rdma_cm', True)
        self.sysfs_root = sysfs_root
        self.configfs_root = configfs_root
        self.run = run
        self.which = which
        self.host = host or socket.gethostname().split('.')[0]

    def result(self):
        nics = [detect_nic(self.sysfs_root, name) for name in self.interfaces]
        capable = [nic for nic in nics if nic['rdma_capable']]
        indexes = set(nic['gid_index'] for nic in capable)
        return {
            'host': self.host,
            'backend': None,
            'traffic_class': traffic_class(self.policy),
            'interfaces': nics,
            'capable_interfaces': [nic['name'] for nic in capable],
            # NCCL and UCX take one GID index for all NICs: only export it when every NIC agrees
            'roce_v2_gid_index': indexes.pop() if len(indexes) == 1 else None,
            'changes': [],
            'differences': [],
            'warnings': [],
            'changed': False,
        }

    def backend(self):
        """The backend object: the chosen one, or mlnx_qos when installed, else dcb."""
        names = BACKENDS if self.backend_choice == 'auto' else (self.backend_choice,)
        for name in names:
            path = self.which(name)
            if path:
                return (MlnxQos if name == 'mlnx_qos' else Dcb)(path, self.run)
        if self.backend_choice == 'auto':
            raise HostError('neither mlnx_qos (mlnx-tools) nor dcb (iproute2) is installed')
        raise HostError('%s is not installed (%s)' % (self.backend_choice,
                                                      'mlnx-tools from DOCA' if self.backend_choice == 'mlnx_qos' else 'iproute2'))

    def label(self, nic):
        return '%s %s/%s' % (self.host, nic['ibdev'] or '-', nic['name'])

    def detect(self):
        result = self.result()
        try:
            result['backend'] = self.backend().name
        except HostError as exc:
            result['warnings'].append(str(exc))
        return result

    def apply(self, check=False):
        """Bring every RoCE-capable NIC to the policy; with ``check`` only report what would change."""
        result = self.result()
        capable = [nic for nic in result['interfaces'] if nic['rdma_capable']]
        if not capable:
            return result
        backend = self.backend()
        result['backend'] = backend.name
        for nic in capable:
            actions, changes, warnings, _current = self._plan(nic, backend)
            result['warnings'].extend(warnings)
            result['changes'].extend('%s: %s' % (self.label(nic), change) for change in changes)
            if actions and not check:
                self._execute(actions)
            result['changed'] = result['changed'] or bool(actions)
        return result

    def verify(self, include_mtu=True):
        """Read every RoCE-capable NIC back and list how it differs from the policy."""
        result = self.result()
        capable = [nic for nic in result['interfaces'] if nic['rdma_capable']]
        if not capable:
            return result
        backend = self.backend()
        result['backend'] = backend.name
        for nic in capable:
            actions, changes, warnings, current = self._plan(nic, backend, verifying=True)
            result['warnings'].extend(warnings)
            # what the NIC holds, for the cluster-wide comparison with the switches (fabric_qos.py)
            nic['qos'] = {'trust': current['trust'], 'dscp2prio': current['dscp2prio'], 'pfc': current['pfc']}
            if include_mtu and nic['mtu'] != self.policy['mtu']['host']:
                changes.append('MTU %s, policy %d' % (nic['mtu'], self.policy['mtu']['host']))
            result['differences'].extend('%s: %s' % (self.label(nic), change) for change in changes)
        return result

    def _plan(self, nic, backend, verifying=False):
        current, warnings = backend.read(nic['name'])
        desired = desired_qos(self.policy)
        actions = [('run', argv) for argv in backend.plan(nic['name'], current, desired)]
        changes = compare_qos(current, desired)
        if self.ecn:
            ecn_actions, ecn_changes, found = plan_ecn(self.sysfs_root, nic['name'], self.policy)
            actions += ecn_actions
            changes += ecn_changes
            if not found:
                warnings.append('the driver exposes no ecn/roce_np, roce_rp switches; ECN stays at the driver default')
        if self.rdma_cm:
            try:
                cm_actions, cm_changes = plan_rdma_cm(self.configfs_root, nic, self.policy)
            except HostError as exc:
                if not verifying:
                    raise
                cm_actions, cm_changes = [], ['RDMA-CM defaults not set: %s' % exc]
            actions += cm_actions
            changes += cm_changes
        return actions, changes, ['%s: %s' % (self.label(nic), warning) for warning in warnings], current

    def _execute(self, actions):
        for action in actions:
            if action[0] == 'run':
                _checked(self.run, action[1])
                continue
            try:
                if action[0] == 'mkdir':
                    os.mkdir(action[1])
                else:
                    with open(action[1], 'w') as handle:
                        handle.write(action[2])
            except (OSError, IOError) as exc:
                raise HostError('cannot %s %s: %s' % (action[0], action[1], exc))


def verify_saved(outputs, policy, backend='auto', host='localhost'):
    """Compare saved read-back text (``{ifname: text}``) with the policy without running anything."""
    desired = desired_qos(policy)
    result = {'differences': [], 'warnings': []}
    for ifname in sorted(outputs):
        text = outputs[ifname]
        name = guess_backend(text) if backend == 'auto' else backend
        parser = parse_mlnx_qos if name == 'mlnx_qos' else parse_dcb
        state, warnings = parser(text, '%s (%s)' % (name, ifname))
        result['warnings'].extend(warnings)
        result['differences'].extend('%s %s: %s' % (host, ifname, diff) for diff in compare_qos(state, desired))
    return result
