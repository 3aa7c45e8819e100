# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Fake sysfs/configfs trees and replaying mlnx_qos/dcb stand-ins for the roce_host tests.

The trees follow the kernel layout that mlnx-tools' show_gids and ibdev2netdev read:
/sys/class/net/IF/device/infiniband/DEV, /sys/class/infiniband/DEV/ports/P/{link_layer,gids/N,
gid_attrs/types/N,gid_attrs/ndevs/N}. An unused GID entry cannot be read (EINVAL); a directory in its
place fails to read the same way.

The fake tools replay recorded outputs (tests/unit/fixtures/mlnx_qos, fixtures/dcb): a read returns the
"before" recording of the interface until a write command for it ran, then the "after" recording. Every
call is logged so tests can assert the exact commands.
"""
from __future__ import annotations
import json
import os
import stat
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / 'fixtures'

# show_gids view of a ConnectX port with one IPv4 address: link-local v1/v2, then the IPv4-mapped v1/v2 pair
STANDARD_GIDS = {
    0: ('IB/RoCE v1', 'fe80:0000:0000:0000:9640:c9ff:fe8c:a09c'),
    1: ('RoCE v2', 'fe80:0000:0000:0000:9640:c9ff:fe8c:a09c'),
    2: ('IB/RoCE v1', '0000:0000:0000:0000:0000:ffff:c0a8:0684'),
    3: ('RoCE v2', '0000:0000:0000:0000:0000:ffff:c0a8:0684'),
}

DCB_OBJECTS = {
    'app': ('dscp-prio',),
    'pfc': ('pfc-cap', 'prio-pfc'),
    'ets': ('prio-tc', 'tc-tsa', 'tc-bw', 'willing'),
}

FAKE_TOOL = r'''#!{python}
import json, os, sys
tool = os.path.basename(sys.argv[0])
args = sys.argv[1:]
state = os.environ['FAKE_TOOL_DIR']
with open(os.path.join(state, 'log.jsonl'), 'a') as log:
    log.write(json.dumps([tool] + args) + '\n')
with open(os.path.join(state, 'responses.json')) as handle:
    responses = json.load(handle)[tool]
ifname = args[args.index('-i' if tool == 'mlnx_qos' else 'dev') + 1]
reply = responses[ifname]
applied_path = os.path.join(state, 'applied.json')
applied = json.load(open(applied_path)) if os.path.exists(applied_path) else []
if reply.get('rc'):
    sys.stderr.write(reply.get('stderr', ''))
    sys.exit(reply['rc'])
write = len(args) > 2 if tool == 'mlnx_qos' else 'show' not in args
if write and ifname not in applied:
    applied.append(ifname)
    json.dump(applied, open(applied_path, 'w'))
text = reply['after'] if ifname in applied else reply['before']
if tool == 'dcb':
    if write:
        sys.exit(0)
    keys = {objects}[[name for name in ('app', 'pfc', 'ets') if name in args][0]]
    text = ''.join(line for line in text.splitlines(True) if line.split() and line.split()[0] in keys)
sys.stdout.write(text)
'''


def fixture(command, name):
    return (FIXTURES / command / name).read_text(encoding='utf-8')


def write(path, value):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value + '\n')


def make_nic(sysfs, name, ibdev=None, port=1, mtu=9000, gids=None, link_layer='Ethernet', ecn=None, cnp=None):
    """Create /sys/class/net/NAME (and its RDMA device when ``ibdev``); return the port directory or None.

    ``gids``: {index: (type or None for an unreadable entry, gid)}; ``ecn``: '0'/'1' for every
    roce_np/roce_rp enable/<prio> file; ``cnp``: (cnp_dscp, cnp_802p_prio) as strings.
    """
    net = Path(sysfs) / 'class' / 'net' / name
    write(net / 'mtu', str(mtu))
    write(net / 'dev_port', str(port - 1))
    if ecn is not None:
        for side in ('roce_np', 'roce_rp'):
            for prio in range(8):
                write(net / 'ecn' / side / 'enable' / str(prio), ecn)
    if cnp is not None:
        write(net / 'ecn' / 'roce_np' / 'cnp_dscp', cnp[0])
        write(net / 'ecn' / 'roce_np' / 'cnp_802p_prio', cnp[1])
    if ibdev is None:
        return None
    (net / 'device' / 'infiniband' / ibdev).mkdir(parents=True)
    port_dir = Path(sysfs) / 'class' / 'infiniband' / ibdev / 'ports' / str(port)
    write(port_dir / 'link_layer', link_layer)
    for index, (gid_type, gid) in (STANDARD_GIDS if gids is None else gids).items():
        write(port_dir / 'gids' / str(index), gid)
        write(port_dir / 'gid_attrs' / 'ndevs' / str(index), name)
        if gid_type is None:
            (port_dir / 'gid_attrs' / 'types' / str(index)).mkdir(parents=True)
        else:
            write(port_dir / 'gid_attrs' / 'types' / str(index), gid_type)
    return port_dir


def make_rails(sysfs, count=8, **kwargs):
    """``count`` rails: ens{N}f0np0 on mlx5_{N-1}; return the interface names."""
    names = []
    for rail in range(count):
        name = 'ens%df0np0' % (rail + 1)
        make_nic(sysfs, name, ibdev='mlx5_%d' % rail, **kwargs)
        names.append(name)
    return names


def make_rdma_cm(configfs, ibdevs=(), port=1, tos='0', mode='IB/RoCE v1'):
    """configfs with rdma_cm loaded; each device in ``ibdevs`` already created (as the kernel fills it in)."""
    root = Path(configfs) / 'rdma_cm'
    root.mkdir(parents=True, exist_ok=True)
    for ibdev in ibdevs:
        write(root / ibdev / 'ports' / str(port) / 'default_roce_tos', tos)
        write(root / ibdev / 'ports' / str(port) / 'default_roce_mode', mode)
    return root


class FakeTools(object):
    """mlnx_qos/dcb stand-ins in ``tmp/bin`` replaying recordings; ``calls`` lists every invocation."""

    def __init__(self, tmp_path, responses):
        self.state = Path(tmp_path) / 'fake-tools'
        self.bin = Path(tmp_path) / 'bin'
        self.state.mkdir()
        self.bin.mkdir()
        (self.state / 'responses.json').write_text(json.dumps(responses))
        script = FAKE_TOOL.replace('{python}', sys.executable).replace('{objects}', repr(DCB_OBJECTS))
        for tool in responses:
            path = self.bin / tool
            path.write_text(script)
            path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def activate(self, monkeypatch):
        """Point the fake tools at their state and put them first on PATH."""
        monkeypatch.setenv('FAKE_TOOL_DIR', str(self.state))
        monkeypatch.setenv('PATH', str(self.bin) + os.pathsep + os.environ.get('PATH', ''))
        return self

    def which(self, name):
        path = self.bin / name
        return str(path) if path.exists() else None

    @property
    def calls(self):
        log = self.state / 'log.jsonl'
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def writes(self):
        """Calls that change something (mlnx_qos with options, dcb set/replace)."""
        return [call for call in self.calls
                if (call[0] == 'mlnx_qos' and len(call) > 3) or (call[0] == 'dcb' and 'show' not in call)]
