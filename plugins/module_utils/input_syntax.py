# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The syntax of the strings an inventory hands to files, shells and trust stores.

Each function takes a value and returns None when it is well formed, else the rule it breaks, worded to follow
"<variable> on <host>: <value>" in a message. The checks run on the controller before any host is touched
(the cluster model, check_inventory.yml); what they let through is what /etc/hosts, known_hosts and the network
configuration files can hold without a second line, a wildcard or an empty match.
"""
from __future__ import annotations

import ipaddress
import posixpath
import re

# RFC 1123 labels: letters, digits and inner hyphens, at most 63 characters
_LABEL_RE = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$')
_MAC_RE = re.compile(r'^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}$')
# what the kernel refuses in a netdev name (dev_valid_name), plus what breaks the files that name it
_IFNAME_FORBIDDEN = re.compile(r'[/:\s"\'\\*?\[\]#;$`]')


def label_problem(value):
    """A DNS label (RFC 1123): a rail name, one part of a host name."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    if not _LABEL_RE.match(value):
        return ('%r is not a host name label (letters, digits and inner hyphens, 1-63 characters)' % value)
    return None


def hostname_problem(value):
    """A host name (RFC 1123): dot-separated labels, at most 253 characters; no wildcard, no trailing dot."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    if not value or len(value) > 253 or any(label_problem(part) for part in value.split('.')):
        return ('%r is not a host name (dot-separated labels of letters, digits and inner hyphens, at most 253 '
                'characters)' % value)
    return None


def ifname_problem(value):
    """A Linux network interface name: 1-15 bytes, not . or .., no slash, colon, whitespace, quote or glob."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    if (not value or len(value.encode('utf-8')) > 15 or value in ('.', '..') or _IFNAME_FORBIDDEN.search(value)
            or not value.isprintable() or not value.isascii()):
        return ('%r is not an interface name (1-15 printable ASCII characters without /, :, whitespace, quotes, '
                'glob or shell characters)' % value)
    return None


def mac_problem(value):
    """A unicast Ethernet MAC as six colon-separated hex pairs (an invalid one would match every link)."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    if not _MAC_RE.match(value):
        return '%r is not a MAC address (six hex pairs separated by colons)' % value
    if int(value[:2], 16) & 1 or value.replace(':', '').strip('0') == '':
        return '%r is a multicast or all-zero MAC, which no NIC has' % value
    return None


# directories a role must never create, chown, chmod, empty or mount over
SYSTEM_DIRS = frozenset([
    '/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/media', '/mnt', '/opt', '/proc', '/root',
    '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/usr/bin', '/usr/include', '/usr/lib', '/usr/lib64',
    '/usr/libexec', '/usr/local', '/usr/local/bin', '/usr/local/lib', '/usr/sbin', '/usr/share', '/var',
    '/var/cache', '/var/lib', '/var/log', '/var/spool', '/var/tmp', '/dev/shm'])
# kernel file systems: nothing of a role's belongs there
_VIRTUAL_TREES = ('/proc/', '/sys/', '/dev/')
# directories every user can write to: a private directory under one can be raced or read
_SHARED_TREES = ('/tmp/', '/var/tmp/', '/dev/shm/')
# what a path may not hold: it reaches unit files, profile.d, modulefiles and MCA files as it is
_PATH_UNSAFE = re.compile(r'[\s"\'\\$`;&|<>*?\[\]{}#\x00-\x1f\x7f]')


def path_problem(value, owned=True, private=False):
    """An absolute, normalised path without blanks, quotes or shell, glob or comment characters.

    ``owned``: the role creates, changes the owner or mode of, empties or mounts over it, so it is not a system
    directory or under /proc, /sys or /dev. ``private``: it holds secrets, so it is not under a world-writable
    directory either.
    """
    if not isinstance(value, str) or not value:
        return 'must be a non-empty string, got %r' % (value,)
    if _PATH_UNSAFE.search(value) or not value.isprintable():
        return '%r holds a blank, quote, control, shell, glob or comment character' % value
    if not value.startswith('/') or posixpath.normpath(value) != value or value.startswith('//'):
        return '%r is not an absolute normalised path (no //, ., .. or trailing /)' % value
    if owned and (value in SYSTEM_DIRS or value.startswith(_VIRTUAL_TREES)):
        return '%r is a system directory or under /proc, /sys or /dev, which the role would take over' % value
    if private and value.startswith(_SHARED_TREES):
        return '%r is under a directory every user can write to, which no secret belongs in' % value
    return None


def from_pattern_problem(value):
    """One entry of an OpenSSH ``from=`` list: an address, a CIDR network or a host name, without wildcards."""
    if not isinstance(value, str) or not value:
        return 'must be a non-empty string, got %r' % (value,)
    try:
        ipaddress.ip_network(value, strict=False)
        return None
    except ValueError:
        pass
    if hostname_problem(value):
        return ('%r is not an address, CIDR network or host name (no wildcard, negation, comma or quote: it '
                'would widen or end the key\'s from= list)' % value)
    return None


def path_problems(paths, owned=True, private=False):
    """``['<name> <rule>']`` for each ``{name: path}`` that ``path_problem`` refuses, in the mapping's order."""
    if not isinstance(paths, dict):
        raise ValueError('paths must be a mapping of variable name to path, got %s' % type(paths).__name__)
    return ['%s %s' % (name, problem) for name, problem in
            ((name, path_problem(path, owned=owned, private=private)) for name, path in paths.items()) if problem]


def from_pattern_problems(patterns):
    """``['[<index>] <rule>']`` for each entry of a ``from=`` list that ``from_pattern_problem`` refuses."""
    if not isinstance(patterns, list):
        raise ValueError('the from= patterns must be a list, got %s' % type(patterns).__name__)
    return ['[%d] %s' % (index, problem) for index, problem in enumerate(map(from_pattern_problem, patterns)) if problem]
