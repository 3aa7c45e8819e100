# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's read-back: what ``findmnt --verify`` says about /etc/fstab, and whether each mount the role
manages is live with the planned source, type and key options.

The live mounts come from ``ansible.builtin.mount_facts`` (``/proc/mounts``), whose options are the kernel's: the
client's settings after negotiation (``vers=4.2`` for ``nfsvers=4.2``), without the userspace options (``_netdev``,
``nofail``, ``x-systemd.*``) that only fstab carries and that the fstab read-back checks. So only the options the
kernel shows as asked are compared (``KEY_OPTIONS``); sizes and timeouts the server negotiates are not.
"""
from __future__ import annotations

import posixpath
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.lnet import nid_net

# a planned option -> the name the kernel shows it under; flags are compared as present, valued ones by value
KEY_OPTIONS = {'nfsvers': 'vers', 'vers': 'vers', 'nconnect': 'nconnect', 'proto': 'proto', 'sec': 'sec',
               'hard': 'hard', 'soft': 'soft', 'ro': 'ro', 'rw': 'rw', 'noatime': 'noatime', 'flock': 'flock',
               'localflock': 'localflock'}
LIVE_STATES = ('mounted', 'remounted')
_FINDMNT_TARGET = re.compile(r'^(?P<target>\S.*)$')
_FINDMNT_ITEM = re.compile(r'^\s+\[(?P<kind>[EW ])\]\s*(?P<text>.*)$')
_FINDMNT_SUMMARY = re.compile(r'^(?P<parse>\d+) parse errors?, (?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?')
# what it prints instead of the counts when all is well
_FINDMNT_CLEAN = 'Success, no errors or warnings detected'


def findmnt_verify(text):
    """``{targets: {mount point: {errors, warnings}}, parse_errors}`` of ``findmnt --verify`` output.

    Its lines are a target, then indented ``[E]`` errors, ``[W]`` warnings and (with ``--verbose``) ``[ ]`` notes;
    the last line counts parse errors, errors and warnings, or says there were none. Raises ValueError when there is
    no such line.
    """
    if text.strip().endswith(_FINDMNT_CLEAN):
        return {'targets': {}, 'parse_errors': 0}
    targets = {}
    current = None
    summary = None
    for line in text.splitlines():
        if not line.strip():
            continue
        item = _FINDMNT_ITEM.match(line)
        counts = _FINDMNT_SUMMARY.match(line)
        if counts:
            summary = counts
        elif item and current is not None:
            if item.group('kind') == 'E':
                current['errors'].append(item.group('text'))
            elif item.group('kind') == 'W':
                current['warnings'].append(item.group('text'))
        elif _FINDMNT_TARGET.match(line) and not item:
            current = targets.setdefault(posixpath.normpath(line.strip()), {'errors': [], 'warnings': []})
    if summary is None:
        raise ValueError('neither its counts ("N parse errors, N errors, N warnings") nor "%s": %s' % (
            _FINDMNT_CLEAN, (text.strip().splitlines() or ['no output'])[-1]))
    return {'targets': targets, 'parse_errors': int(summary.group('parse'))}


def findmnt_problems(mounts, text):
    """One line per ``findmnt --verify`` error on a mount the role manages, and one for fstab lines it could not
    parse (any line: a broken line can hide the next entry). Warnings are not problems: a Lustre entry is
    "unsupported by the current kernel" until its module is loaded."""
    try:
        verified = findmnt_verify(text)
    except ValueError as exc:
        return ['findmnt --verify: %s' % exc]
    problems = []
    if verified['parse_errors']:
        problems.append('findmnt --verify: /etc/fstab has %d line(s) it cannot parse' % verified['parse_errors'])
    for mount in mounts:
        if mount['state'] == 'absent':
            continue
        found = verified['targets'].get(posixpath.normpath(mount['path']), {'errors': []})
        problems += ['%s: findmnt --verify: %s' % (mount['path'], error) for error in found['errors']]
    return problems


def _options(text):
    """``{name: value or True}`` of comma-separated mount options."""
    options = {}
    for option in (text or '').split(','):
        name, sep, value = option.partition('=')
        if name:
            options[name] = value if sep else True
    return options


def _same_source(planned, live, fstype):
    if fstype == 'lustre':
        # the kernel prints NIDs in LNet's canonical form: 10.0.0.1@o2ib0 becomes 10.0.0.1@o2ib
        def canonical(src):
            nids, _sep, fsname = src.rpartition(':/')
            return re.sub(r'[^:,]+', lambda m: m.group(0).rpartition('@')[0] + '@' + (nid_net(m.group(0)) or ''),
                          nids), fsname
        return canonical(planned) == canonical(live)
    return planned.rstrip('/') == live.rstrip('/')


def _version_matches(planned, live):
    """``nfsvers=4`` is met by ``vers=4.2`` (the kernel negotiates the minor version); ``4.1`` only by ``4.1``."""
    return live == planned or ('.' not in planned and live.split('.')[0] == planned)


def _option_problems(mount, live_options):
    problems = []
    for name, value in _options(mount['opts']).items():
        shown = KEY_OPTIONS.get(name)
        if shown is None:
            continue
        found = live_options.get(shown)
        if value is True:
            if found is None:
                problems.append('%s: mounted without %s' % (mount['path'], name))
        elif found is None or not (_version_matches(value, found) if shown == 'vers' else found == value):
            problems.append('%s: mounted with %s=%s, expected %s=%s' % (
                mount['path'], shown, 'unset' if found is None else found, name, value))
    return problems


def live_problems(mounts, mount_points):
    """One line per mount of the plan that the live mounts (``mount_facts``' ``mount_points``) do not hold as
    planned: a ``mounted`` one not mounted or with another source, type or key option (``KEY_OPTIONS``); an
    ``unmounted`` or ``absent`` one still mounted. A mount with ``automount`` may be the armed ``autofs`` trigger
    instead, until something opens it."""
    by_path = {posixpath.normpath(path): live for path, live in (mount_points or {}).items()}
    problems = []
    for mount in mounts:
        live = by_path.get(posixpath.normpath(mount['path']))
        if mount['state'] not in LIVE_STATES:
            if live is not None and mount['state'] in ('absent', 'unmounted'):
                problems.append('%s is mounted (%s) but its state is %s' % (mount['path'], live.get('device'),
                                                                            mount['state']))
            continue
        if live is None:
            problems.append('%s is not mounted' % mount['path'])
            continue
        if mount.get('automount') and live.get('fstype') == 'autofs':
            continue
        fstype = live.get('fstype')
        if fstype != mount['fstype'] and {fstype, mount['fstype']} != {'nfs', 'nfs4'}:
            problems.append('%s is a %s mount, expected %s' % (mount['path'], fstype, mount['fstype']))
            continue
        if not _same_source(mount['src'], str(live.get('device')), mount['fstype']):
            problems.append('%s is mounted from %s, expected %s' % (mount['path'], live.get('device'), mount['src']))
        problems += _option_problems(mount, _options(live.get('options')))
    return problems
