# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Is ``validate_checkpoint_dir`` one filesystem on every node?

The smoke training writes its checkpoint on one node and resumes on another, so the directory must be the same
shared directory everywhere; a node where the mount is missing writes into its own disk and nobody notices until a
job restarts elsewhere. Every node leaves a mark named for itself and this run in the directory, then lists the
marks of this run it sees. Nodes on one filesystem see the same marks, so they report the same digest of the names:
each node sends back a count and a digest whatever the cluster size, and the nodes group exactly by filesystem. The
largest group (the first node's on a tie: the smoke training starts there) is the shared directory; every node
outside it is named.

``mark``, ``listing`` and ``remove`` are what the ``shared_dir_marks`` module does on a node; ``problems`` judges
the module's registered results on the controller. Bad input raises :class:`ValueError`.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re

PREFIX = '.hpcfabric-shared-'
RUN_RE = re.compile(r'^[a-z0-9]{8,64}$')
HOST_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')


def mark_name(host, run):
    """The file name of ``host``'s mark for the run ``run``: hidden, and never the name of an earlier run's mark."""
    if not isinstance(host, str) or not HOST_RE.match(host):
        raise ValueError('host must be a host name of letters, digits and ._-, got %r' % (host,))
    if not isinstance(run, str) or not RUN_RE.match(run):
        raise ValueError('run must be 8 to 64 lowercase letters and digits, got %r' % (run,))
    return '%s%s.%s' % (PREFIX, host, run)


def mark(directory, host, run):
    """Create ``directory`` (with its parents) when missing and write ``host``'s mark in it; the mark's path."""
    path = os.path.join(directory, mark_name(host, run))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(host + '\n')
    return path


def listing(directory, run):
    """``{count, digest}`` of the marks of the run ``run`` in ``directory``: how many, and the SHA-256 of their
    sorted names."""
    mark_name('x', run)
    suffix = '.' + run
    names = sorted(name for name in os.listdir(directory) if name.startswith(PREFIX) and name.endswith(suffix))
    return {'count': len(names), 'digest': hashlib.sha256('\n'.join(names).encode('utf-8')).hexdigest()}


def remove(directory, host, run):
    """Remove ``host``'s mark; True when there was one."""
    try:
        os.remove(os.path.join(directory, mark_name(host, run)))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True


def _failure(result):
    """Why a registered task failed, None when it did not."""
    if not isinstance(result, dict) or result.get('skipped'):
        return 'it did not run'
    if result.get('failed'):
        return result.get('msg') or 'it failed'
    return None


def _names(hosts, limit=8):
    hosts = list(hosts)
    return ', '.join(hosts[:limit]) + (' and %d more' % (len(hosts) - limit) if len(hosts) > limit else '')


def problems(hosts, checks, directory, user):
    """``{host: [problem]}`` for every host, an empty list where the directory is the shared one.

    ``checks`` maps each host to ``{mark, listing}``: its registered results of the ``shared_dir_marks`` module
    writing its mark and listing the marks. ``user`` is the MPI user who wrote them.
    """
    if not isinstance(hosts, (list, tuple)):
        raise ValueError('hosts must be a list, got %r' % (hosts,))
    if not isinstance(checks, dict):
        raise ValueError('checks must map each host to its {mark, listing} results, got %r' % (checks,))
    found = dict((host, []) for host in hosts)
    groups = {}
    for host in hosts:
        check = checks.get(host)
        if not isinstance(check, dict):
            raise ValueError('no shared directory check for %s' % host)
        error = _failure(check.get('mark'))
        if error:
            found[host].append('validate_checkpoint_dir %s: %s cannot write there (%s): create it on the shared '
                               'filesystem, writable by %s' % (directory, user, error, user))
            continue
        seen = check.get('listing')
        if not isinstance(seen, dict) or not seen.get('digest'):
            # the lookups retry while a node sees fewer marks than were written, then fail: the digest is still there
            error = _failure(seen)
            found[host].append('validate_checkpoint_dir %s: %s cannot list it (%s)' % (directory, user, error))
            continue
        groups.setdefault(seen['digest'], []).append(host)
    # one node, or every node in one group: nothing to name
    if len(groups) < 2:
        return found
    ordered = sorted(groups.values(), key=lambda group: (-len(group), hosts[0] not in group))
    shared = ordered[0]
    if len(shared) == 1:
        for group in ordered:
            found[group[0]].append('validate_checkpoint_dir %s is not shared: no node sees a file another node wrote '
                                   'there; set it to a directory on the shared filesystem the nodes mount (Lustre, '
                                   'NFS)' % directory)
        return found
    for group in ordered[1:]:
        for host in group:
            found[host].append('validate_checkpoint_dir %s is not the directory %d other nodes share (%s): %s sees '
                               'the files of %s, not theirs; mount the shared filesystem there, or a checkpoint '
                               'written on one node is missing where a job resumes'
                               % (directory, len(shared), _names(shared), host,
                                  'itself only' if len(group) == 1 else _names(group)))
    return found
