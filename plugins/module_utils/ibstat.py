# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Parse ``ibstat`` text into the ``ansible_facts.ib`` structure, and summarise it.

Pure functions only: no I/O, so both the module and the unit tests call them on recorded text.
``ib_sysfs`` builds the same structure from ``/sys/class/infiniband`` and shares the normalisers and
``summarize()`` kept here, so both sources report identical values.
"""

from __future__ import annotations

import re

try:
    from ansible_collections.hpcfabric.cluster.plugins.module_utils import pasted_text
except ImportError:  # the boot-time copy of the roce_qos role, beside pasted_text.py
    import pasted_text

# The strings ibstat.c prints for PortInfo:PortState and PortPhysicalState, indexed by their value.
PORT_STATES = ('???', 'Down', 'Initializing', 'Armed', 'Active')
PHYS_STATES = ('No state change', 'Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp',
               'LinkErrorRecovery', 'PhyTest')

# ibstat.c names a node by its type ("CA 'mlx5_0'"); with a port number argument it prints "CA: 'mlx5_0'" and one port.
_HEADER_RE = re.compile(r"^\s*(CA|Switch|Router|iWARP RNIC|\?\?\?):?\s+'([^']+)'\s*$")
_PORT_RE = re.compile(r'^\s*Port\s+(\d+):\s*$')
_FIELD_RE = re.compile(r'^\s*([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$')
_RATE_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)')
# The other forms of the same tool: `ibstat -l` prints one CA name per line, `ibstat -p` one port GUID per line
# ("0x%016" PRIx64 in ibstat.c). Kernel RDMA device names (mlx5_0, rxe0, irdma1, rocep65s0f0) end in a digit.
_CA_NAME_LINE_RE = re.compile(r'^\s*([A-Za-z][\w.-]{0,62}\d)\s*$')
_GUID_LINE_RE = re.compile(r'^\s*(0x[0-9a-fA-F]{16})\s*$')

_DEVICE_FIELDS = {
    'Number of ports': ('num_ports', int),
    'Firmware version': ('firmware_version', str),
    'Hardware version': ('hardware_version', str),
    'Node GUID': ('node_guid', str),
    'System image GUID': ('system_image_guid', str),
}
_PORT_FIELDS = {
    'State': ('state', str),
    'Physical state': ('physical_state', str),
    'Rate': ('rate_gbps', 'rate'),
    'Base lid': ('base_lid', int),
    'LMC': ('lmc', int),
    'SM lid': ('sm_lid', int),
    'Port GUID': ('port_guid', str),
    'Link layer': ('link_layer', str),
}
# Printed by ibstat but not part of the facts.
_IGNORED_FIELDS = ('Capability mask',)


class IbstatParseError(Exception):
    """ibstat text with nothing parseable in it; ``line``/``lineno`` name the first offending line."""

    def __init__(self, message, line=None, lineno=None):
        super(IbstatParseError, self).__init__(message)
        self.line = line
        self.lineno = lineno


def new_device(node_type='CA'):
    """Return a device entry with every contract key present (unknown values are None)."""
    return {
        'node_type': node_type,
        'ca_type': None,
        'num_ports': None,
        'firmware_version': None,
        'hardware_version': None,
        'node_guid': None,
        'system_image_guid': None,
        'ports': {},
    }


def new_port():
    """Return a port entry with every contract key present (unknown values are None)."""
    return {
        'state': None,
        'physical_state': None,
        'rate_gbps': None,
        'link_layer': None,
        'base_lid': None,
        'sm_lid': None,
        'lmc': None,
        'port_guid': None,
        'netdev': None,
        'roce_v2_gid_index': None,
    }


def parse_rate(text):
    """Return the Gb/s number leading ``text`` ("200", "2.5", "40 (FDR10)", "200 Gb/sec (4X HDR)").

    Whole rates come back as int, 2.5 (1X SDR) as float; None when there is no number.
    """
    match = _RATE_RE.match(text or '')
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def state_name(code, fallback):
    """ibstat's name for port state ``code``; ``fallback`` for values ibstat has no name for."""
    return PORT_STATES[code] if 0 < code < len(PORT_STATES) else fallback


def phys_state_name(code, fallback):
    """ibstat's name for physical port state ``code``; ``fallback`` for values ibstat has no name for."""
    return PHYS_STATES[code] if 0 <= code < len(PHYS_STATES) else fallback


class _Parser:
    """Line-by-line state machine; fields are matched by name, so any indentation (or none) works."""

    def __init__(self):
        self.devices = {}
        self.device = None
        self.port = None
        self.unreadable = []
        self.warnings = []

    def feed(self, lineno, line):
        if not line.strip():
            return
        if self._header(line) or self._port(line) or self._field(lineno, line):
            return
        self.unreadable.append((lineno, line))

    def _header(self, line):
        match = _HEADER_RE.match(line)
        if not match:
            return False
        node_type, name = match.groups()
        self.device = new_device(node_type)
        self.devices[name] = self.device
        self.port = None
        return True

    def _port(self, line):
        match = _PORT_RE.match(line)
        if not match or self.device is None:
            return False
        self.port = new_port()
        self.device['ports'][match.group(1)] = self.port
        return True

    def _field(self, lineno, line):
        match = _FIELD_RE.match(line)
        if not match or self.device is None:
            return False
        key, value = match.groups()
        if key in _IGNORED_FIELDS:
            return True
        if key.endswith(' type') and key[:-len(' type')] == self.device['node_type']:
            self.device['ca_type'] = value
            return True
        if key in _DEVICE_FIELDS:
            return self._store(self.device, _DEVICE_FIELDS[key], key, value, lineno)
        if key in _PORT_FIELDS and self.port is not None:
            return self._store(self.port, _PORT_FIELDS[key], key, value, lineno)
        return False

    def _store(self, target, spec, key, value, lineno):
        name, kind = spec
        if kind == 'rate':
            converted = parse_rate(value)
        elif kind is int:
            converted = int(value) if re.match(r'^\d+$', value) else None
        else:
            converted = value
        if converted is None and value:
            self.warnings.append("ibstat line %d: %s %r is not a number; left null" % (lineno, key, value))
        target[name] = converted
        return True

    def check_port_counts(self):
        names = sorted(self.devices)
        if not any(self.devices[name]['ports'] for name in names):
            self.warnings.append(
                "ibstat: the text lists CAs without any 'Port N:' section (the `ibstat -s` form, or cut before "
                "the ports): device facts only; port state, rate, link layer and port GUID are missing")
            return
        for name in names:
            device = self.devices[name]
            listed = len(device['ports'])
            if device['num_ports'] is not None and listed < device['num_ports']:
                self.warnings.append(
                    "ibstat: CA '%s' has %d ports but the output lists %d (truncated output?)"
                    % (name, device['num_ports'], listed))

    def report_unreadable(self):
        self.warnings.extend(pasted_text.skipped_lines('ibstat', self.unreadable))


def parse_ibstat(text):
    """Parse ``ibstat`` output into ``(devices, warnings)``.

    ``devices`` maps CA name to the contract's device dict (ports keyed by port number as a string).
    ``warnings`` names every line that could not be read (error lines such as ``ibpanic: ...``,
    elisions) and inconsistencies such as fewer ports than announced. The shorter forms of the same tool
    give what they hold, with a warning naming the form and what it lacks: ``ibstat -l`` the CA names,
    ``ibstat -s`` the CAs without ports, ``ibstat -p`` nothing but port GUIDs (named in the warning).
    Terminal escapes of a pasted copy are removed first. Raises IbstatParseError naming the first
    offending line when the text holds none of these.
    """
    parser = _Parser()
    lines = pasted_text.clean(text).splitlines()
    for lineno, line in enumerate(lines, 1):
        parser.feed(lineno, line)
    if not parser.devices:
        return _parse_lists(lines)
    parser.check_port_counts()
    parser.report_unreadable()
    return parser.devices, parser.warnings


def _parse_lists(lines):
    """Read the ``ibstat -l`` (CA names) and ``ibstat -p`` (port GUIDs) forms; raise when the text is neither."""
    names, guids, unreadable = [], [], []
    for lineno, line in enumerate(lines, 1):
        guid = _GUID_LINE_RE.match(line)
        name = _CA_NAME_LINE_RE.match(line)
        if guid:
            guids.append(guid.group(1))
        elif name:
            names.append(name.group(1))
        elif line.strip():
            unreadable.append((lineno, line))
    if not names and not guids:
        raise _nothing_parseable(lines)
    warnings = []
    if names:
        warnings.append(
            'ibstat: the text is the `ibstat -l` form (CA names only): %s; type, firmware, GUIDs and every port '
            'fact (state, rate, link layer) are missing: save plain `ibstat` output for those' % ', '.join(names))
    if guids:
        warnings.append(
            'ibstat: the text is the `ibstat -p` form (port GUIDs only): %s; it names no CA, so no device or '
            'port facts are read from it: save plain `ibstat` output for those' % ', '.join(guids))
    return dict((name, new_device()) for name in names), warnings + pasted_text.skipped_lines('ibstat', unreadable)


def _nothing_parseable(lines):
    for lineno, line in enumerate(lines, 1):
        if line.strip():
            return IbstatParseError(
                "no CA found in ibstat output; line %d is not ibstat output: %r" % (lineno, line.strip()),
                line=line, lineno=lineno)
    return IbstatParseError('ibstat printed nothing: no RDMA device was listed')


def summarize(devices, source):
    """Return the ``ansible_facts.ib`` dict: the devices plus the summaries validation asserts on.

    ``active_ports`` is a count of ports whose state is Active; ``min_active_rate_gbps`` the lowest
    known rate among them (None when no Active port has a rate); ``link_layers`` the sorted distinct
    link layers of all ports. ``ca_names`` is a plain string sort, as ibstat orders CAs (mlx5_10 before mlx5_2).
    """
    ports = [port for name in devices for port in devices[name]['ports'].values()]
    active = [port for port in ports if port['state'] == 'Active']
    rates = [port['rate_gbps'] for port in active if port['rate_gbps'] is not None]
    return {
        'source': source,
        'devices': devices,
        'ca_names': sorted(devices),
        'active_ports': len(active),
        'min_active_rate_gbps': min(rates) if rates else None,
        'link_layers': sorted(set(port['link_layer'] for port in ports if port['link_layer'])),
    }
