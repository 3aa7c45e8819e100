# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's mounts: the checks of ``storage_mounts`` and the mount options each entry gets.

Every source, mount point and option ends up as a field of ``/etc/fstab``, whose fields are separated by blanks
and whose lines start comments with ``#``. So beyond its filesystem's form (``server:/export`` for NFS,
``nid@net:/fsname`` for Lustre), a value with whitespace, a control character or ``#`` is refused rather than
written: it would split a field, end a line or hide the entry.
"""
from __future__ import annotations

import json
import posixpath
import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import lnet_network_parts, system_dir_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.lnet import canonical_net, nid_net

NFS_TYPES = ('nfs', 'nfs4')
FSTYPES = NFS_TYPES + ('lustre',)
# every network filesystem waits for the network; `nofail` (unless a mount turns it off) keeps a dead server from
# blocking boot
ALWAYS_OPTIONS = ('_netdev',)

# \s covers Unicode blanks as well as space, tab and newline
_FSTAB_UNSAFE = re.compile(r'[\s#\x00-\x1f\x7f]')
# a host name or IPv4 address, or an IPv6 address in brackets; then the absolute export
_NFS_SRC = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_][A-Za-z0-9_.-]*):/')
# MGS NIDs (one node's NIDs joined by ",", failover nodes by ":"), then the filesystem name
_NID = r'[A-Za-z0-9_.-]+@[a-z0-9]+'
_LUSTRE_SRC = re.compile(r'^{nid}(,{nid})*(:{nid}(,{nid})*)*:/[A-Za-z0-9_]+$'.format(nid=_NID))
_LUSTRE_PACKAGES_MISSING = ('a Lustre mount is listed but storage_lustre_packages is empty (Lustre clients come '
                            'from the site repository)')


def _unsafe(what, value):
    return '%s %s holds whitespace, a control character or #, which /etc/fstab cannot carry' % (
        what, json.dumps(value))


def _text(mount, key, at, problems):
    """The string ``mount[key]``, or None after noting why it is not one that can reach fstab."""
    value = mount.get(key)
    if not isinstance(value, str) or not value:
        problems.append('%s.%s is %s, not a non-empty string' % (at, key, 'missing' if value is None else
                                                                 json.dumps(value, default=repr)))
        return None
    if _FSTAB_UNSAFE.search(value):
        problems.append(_unsafe('%s.%s' % (at, key), value))
        return None
    return value


def _path_problems(path, at):
    if not path.startswith('/') or posixpath.normpath(path).strip('/') == '':
        return ['%s.path %s is not an absolute mount point' % (at, path)]
    if any(part in ('.', '..') for part in path.split('/')):
        return ['%s.path %s has a . or .. component' % (at, path)]
    # the system's directories, however written (/etc/, //usr); /home, /srv, /mnt and /media may take a mount
    problem = system_dir_problem(path, mount=True)
    return ['%s.path %s' % (at, problem)] if problem else []


def _src_problems(mount, src, at):
    if mount['fstype'] in NFS_TYPES and not _NFS_SRC.match(src):
        return ['%s.src %s is not server:/export' % (at, src)]
    if mount['fstype'] == 'lustre' and not _LUSTRE_SRC.fullmatch(src):
        return ['%s.src %s is not nid@net:/fsname' % (at, src)]
    return []


def _default_options(mount, nfs_options, lustre_options):
    """The options of ``mount`` before the role's own: its ``opts``, else its filesystem's default, with the name of
    the variable they came from."""
    if mount.get('opts') is not None:
        return mount['opts'], None
    if mount['fstype'] == 'lustre':
        return lustre_options, 'storage_lustre_options'
    return nfs_options, 'storage_nfs_options'


def _options_problem(options, what):
    if not isinstance(options, str):
        return '%s is %s, not a string of comma-separated options' % (what, json.dumps(options, default=repr))
    if _FSTAB_UNSAFE.search(options):
        return _unsafe(what, options)
    return None


def mount_problems(mounts, nfs_options, lustre_options, lustre_packages):
    """Why ``mounts`` (``storage_mounts``) cannot be written to /etc/fstab, one message per problem in list order;
    empty when they can.

    Messages name the entry (``[2].src ...``) or the variable (``storage_nfs_options ...``). Mount points must be
    absolute, without ``.`` or ``..`` components, not a system directory (``input_syntax.system_dir_problem``: ``/``,
    ``/etc``, ``/usr``, ``/opt``... however written; ``/home``, ``/srv``, ``/mnt`` and ``/media`` may take a mount) and
    unique (``/data`` and ``/data/`` are one); NFS
    sources are ``server:/export``, Lustre sources ``nid@net[,nid@net][:nid@net...]:/fsname``; a Lustre mount
    needs ``lustre_packages``.
    """
    if not isinstance(mounts, list):
        return ['storage_mounts is %s, not a list of mounts' % type(mounts).__name__]
    uses = {}
    for mount in mounts:
        if isinstance(mount, dict) and isinstance(mount.get('path'), str):
            key = posixpath.normpath(mount['path'])
            uses[key] = uses.get(key, 0) + 1
    problems = []
    defaults_checked = set()
    for index, mount in enumerate(mounts):
        at = '[%d]' % index
        if not isinstance(mount, dict):
            problems.append('%s is %s, not a mapping with src, path and fstype' % (at, json.dumps(mount, default=repr)))
            continue
        path = _text(mount, 'path', at, problems)
        if path is not None:
            problems.extend(_path_problems(path, at))
            if uses[posixpath.normpath(path)] > 1:
                problems.append('%s.path %s is listed more than once' % (at, path))
        if mount.get('fstype') not in FSTYPES:
            problems.append('%s.fstype %s is not one of %s' % (at, json.dumps(mount.get('fstype'), default=repr),
                                                               ', '.join(FSTYPES)))
            continue
        src = _text(mount, 'src', at, problems)
        if src is not None:
            problems.extend(_src_problems(mount, src, at))
        options, variable = _default_options(mount, nfs_options, lustre_options)
        if variable not in defaults_checked:
            problem = _options_problem(options, variable or '%s.opts' % at)
            if problem:
                problems.append(problem)
            if variable:
                defaults_checked.add(variable)
    if any(isinstance(m, dict) and m.get('fstype') == 'lustre' for m in mounts) and not lustre_packages:
        problems.append(_LUSTRE_PACKAGES_MISSING)
    return problems


def normalize_mounts(mounts, nfs_options, lustre_options, state):
    """Each mount of ``mounts`` with the options and state the role mounts it with.

    ``opts`` is the mount's own (or its filesystem's default, ``nfs_options`` or ``lustre_options``), then
    ``_netdev``, ``nofail`` unless the mount sets ``nofail: false``, ``x-systemd.automount`` where it sets
    ``automount: true``; empty options dropped, each once, joined by commas. ``state`` is the mount's, else the
    given default. Other keys are kept. Assumes ``mount_problems`` found nothing.
    """
    result = []
    for mount in mounts:
        options, _variable = _default_options(mount, nfs_options, lustre_options)
        wanted = (options.split(',') + list(ALWAYS_OPTIONS)
                  + (['nofail'] if mount.get('nofail', True) else [])
                  + (['x-systemd.automount'] if mount.get('automount', False) else []))
        result.append(dict(mount, opts=','.join(dict.fromkeys(o for o in wanted if o)),
                           state=mount.get('state') or state))
    return result


def lnet_problems(mounts, networks, ping_nids):
    """Why the Lustre mounts of ``mounts`` cannot reach their servers over ``networks`` (``storage_lnet_networks``):
    no network at all, or an MGS on none of them; and each of ``ping_nids`` that is not a NID on one of them.
    Malformed network specs are left to the ``lnet_network`` input check."""
    configured = set()
    for spec in networks or []:
        parts = lnet_network_parts(spec)
        if parts:
            configured.add(canonical_net(parts[0]))
    problems = []
    for index, mount in enumerate(mounts):
        if not isinstance(mount, dict) or mount.get('fstype') != 'lustre' or not _LUSTRE_SRC.fullmatch(
                str(mount.get('src'))):
            continue
        if not networks:
            problems.append('[%d] is a Lustre mount but storage_lnet_networks is empty (the client needs the LNet '
                            'network its servers are on, e.g. o2ib0(ib0))' % index)
            continue
        nets = {nid_net(nid) for nid in re.split('[:,]', mount['src'].rpartition(':/')[0])}
        if not nets & configured:
            problems.append('[%d].src %s: its MGS is on %s, which storage_lnet_networks does not configure (%s)' % (
                index, mount['src'], ', '.join(sorted(nets)), ', '.join(sorted(configured)) or 'none'))
    for index, nid in enumerate(ping_nids or []):
        net = nid_net(nid)
        if net is None or _FSTAB_UNSAFE.search(str(nid)):
            problems.append('storage_lnet_ping_nids[%d] %s is not a NID such as 10.0.0.1@o2ib0' % (
                index, json.dumps(nid, default=repr)))
        elif net not in configured:
            problems.append('storage_lnet_ping_nids[%d] %s is on %s, which storage_lnet_networks does not configure'
                            % (index, nid, net))
    return problems


def mount_plan(mounts, nfs_options, lustre_options, state, lustre_packages, lnet_networks=(), lnet_ping_nids=()):
    """``{problems, mounts}``: ``mount_problems`` and ``lnet_problems`` and, when there are none,
    ``normalize_mounts`` (else no mount)."""
    problems = mount_problems(mounts, nfs_options, lustre_options, lustre_packages)
    if isinstance(mounts, list):
        problems += lnet_problems(mounts, lnet_networks, lnet_ping_nids)
    return {'problems': problems,
            'mounts': [] if problems else normalize_mounts(mounts, nfs_options, lustre_options, state)}


def _fstab_field(field):
    """A field of /etc/fstab with its octal escapes (``\\040`` for a space) decoded, as mount(8) reads it."""
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def fstab_entries(text):
    """``{mount point: [{src, fstype, opts}]}`` of /etc/fstab's entries; comments and blank lines skipped."""
    if not isinstance(text, str):
        raise ValueError('fstab must be text, got %s' % type(text).__name__)
    entries = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith('#') or len(fields) < 3:
            continue
        src, path, fstype = (_fstab_field(f) for f in fields[:3])
        opts = _fstab_field(fields[3]) if len(fields) > 3 else 'defaults'
        entries.setdefault(posixpath.normpath(path), []).append({'src': src, 'fstype': fstype, 'opts': opts})
    return entries


def fstab_drift(mounts, fstab_text):
    """One line per mount of the plan (``mount_plan``'s ``mounts``) that /etc/fstab does not hold as planned: an
    entry missing, listed twice, with another source, type or options (compared as sets), or present where the
    state is ``absent``."""
    entries = fstab_entries(fstab_text)
    drift = []
    for mount in mounts:
        path = posixpath.normpath(mount['path'])
        found = entries.get(path, [])
        if mount['state'] == 'absent':
            if found:
                drift.append('%s is in /etc/fstab but its state is absent' % mount['path'])
            continue
        if not found:
            drift.append('%s is not in /etc/fstab' % mount['path'])
            continue
        if len(found) > 1:
            drift.append('%s is in /etc/fstab %d times' % (mount['path'], len(found)))
        entry = found[-1]
        want = {'src': mount['src'], 'fstype': mount['fstype'], 'opts': mount['opts']}
        for key in ('src', 'fstype'):
            if entry[key] != want[key]:
                drift.append('%s: /etc/fstab has %s %s, expected %s' % (mount['path'], key, entry[key], want[key]))
        if set(entry['opts'].split(',')) != set(want['opts'].split(',')):
            drift.append('%s: /etc/fstab has options %s, expected %s' % (mount['path'], entry['opts'], want['opts']))
    return drift
