# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The Open MPI hostfile the mpi_hostfile role writes (the mpi_hostfile filter), one ``name slots=N`` line per host."""
from __future__ import annotations


def _slot_count(value, name):
    if isinstance(value, bool):
        raise ValueError('host %r: slots must be a whole number >= 1, got %r' % (name, value))
    try:
        slots = int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError('host %r: slots must be a whole number >= 1, got %r' % (name, value)) from exc
    if slots != value and str(slots) != str(value).strip():
        raise ValueError('host %r: slots must be a whole number >= 1, got %r' % (name, value))
    if slots < 1:
        raise ValueError('host %r: slots must be at least 1, got %d' % (name, slots))
    return slots


def _entry(host, default_slots, name_key):
    if isinstance(host, dict):
        name = host.get(name_key)
        slots = host.get('slots', default_slots)
    else:
        name = host
        slots = default_slots
    if not isinstance(name, str) or not name.strip():
        raise ValueError('empty or missing host name in %r' % (host,))
    if name != name.strip() or len(name.split()) != 1:
        raise ValueError('host %r: a host name cannot contain whitespace' % (name,))
    if slots is None:
        raise ValueError('host %r has no slot count: give it slots or pass slots=N' % (name,))
    return name, _slot_count(slots, name)


def mpi_hostfile(hosts, slots=None, name_key='name'):
    """Open MPI hostfile text; see DOCUMENTATION."""
    if isinstance(hosts, (str, dict)) or not hasattr(hosts, '__iter__'):
        raise ValueError('expects a list of host names or {name, slots} dicts, got %s' % type(hosts).__name__)
    seen = set()
    lines = []
    for host in hosts:
        name, count = _entry(host, slots, name_key)
        if name in seen:
            raise ValueError('duplicate host %r' % (name,))
        seen.add(name)
        lines.append('%s slots=%d\n' % (name, count))
    return ''.join(lines)
