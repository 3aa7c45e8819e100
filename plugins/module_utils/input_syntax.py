# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The syntax of the strings an inventory hands to files, shells and trust stores.

Each function takes a value and returns None when it is well formed, else the rule it breaks, worded to follow
"<variable> on <host>: <value>" in a message. The checks run on the controller before any host is touched
(the cluster model, check_inventory.yml); what they let through is what /etc/hosts, known_hosts and the network
configuration files can hold without a second line, a wildcard or an empty match, and what the package repositories,
signing keys and tarballs the roles fetch can be fetched from without trusting the network on the way.
"""
from __future__ import annotations

import ipaddress
import posixpath
import re

from ansible.module_utils.parsing.convert_bool import boolean

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


# what a URL may not hold: it reaches apt source lines, dnf repository files, get_url and the logs as it is
_URL_UNSAFE = re.compile(r'[\s"\'\\`<>{}|^\x00-\x1f\x7f]')
_URL_SCHEME = re.compile(r'^([A-Za-z][A-Za-z0-9+.-]*):')
# the authority of a URL with one (scheme://authority/...): user information, host, port
_URL_AUTHORITY = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)')
_URL_HOST_PORT = re.compile(r'^(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]]+))(?::([0-9]{1,5}))?$')


def _host_port_ok(authority):
    """Whether ``authority`` is a host name, an IPv4 address or a bracketed IPv6 one, with an optional port 1-65535."""
    match = _URL_HOST_PORT.match(authority)
    if not match or (match.group(3) is not None and not 0 < int(match.group(3)) < 65536):
        return False
    if match.group(1) is None:
        return hostname_problem(match.group(2)) is None
    try:
        ipaddress.IPv6Address(match.group(1))
    except ValueError:
        return False
    return True


def url_problem(value, allow_http=False, allow_variable=None):
    """A URL a role fetches a repository, signing key or tarball from: https with a host, or a file: path on the node.

    Printable ASCII without blanks, quotes, backslash, backtick, ``<>{}|^`` or control characters (a line break
    would add a line of its own to an apt source), no fragment and no user information (a password in a URL is
    logged and written to the files that hold the URL). Plain ``http`` only with ``allow_http``: what it serves
    could be replaced on the way; ``allow_variable`` is the setting that allows it, named in the message.
    """
    allow_http = boolean(allow_http, strict=True)
    if not isinstance(value, str) or not value:
        return 'must be a non-empty string, got %r' % (value,)
    authority = _URL_AUTHORITY.match(value)
    if authority and '@' in authority.group(1):
        # the URL is shown without its user information, which is what must not reach a log
        shown = value[:authority.start(1)] + '***' + value[authority.start(1) + authority.group(1).rindex('@'):]
        return ('%r holds credentials (user@ before the host), which would be logged and written to files with the '
                'URL; give the mirror access another way (a client certificate, a proxy, an address allow-list)'
                % shown)
    if _URL_UNSAFE.search(value) or not value.isascii() or not value.isprintable():
        return ('%r holds a blank, quote, backslash, backtick, <, >, {, }, |, ^, control or non-ASCII character'
                % value)
    if '#' in value:
        return '%r holds a fragment (#), which no repository or download uses' % value
    scheme = _URL_SCHEME.match(value)
    scheme = scheme.group(1).lower() if scheme else ''
    if scheme == 'http' and not allow_http:
        return ('%r is plain HTTP: what it serves could be replaced on the way; use https://%s'
                % (value, ', or set %s: true for a mirror on a private network without TLS' % allow_variable
                   if allow_variable else ''))
    if scheme == 'file':
        # file:/srv/mirror/ or file:///srv/mirror/; a host there would be another machine's file system
        path = value[authority.end():] if authority else value[len('file:'):]
        if (authority and authority.group(1)) or not path.startswith('/'):
            return ('%r is not a file: URL of an absolute path on the node, without a host (e.g. file:///srv/mirror/)'
                    % value)
        return None
    if scheme not in ('https', 'http'):
        return ('%r is not an %s URL with a host, nor a file: URL of a path on the node'
                % (value, 'http:// or https://' if allow_http else 'https://'))
    if not authority or not _host_port_ok(authority.group(1)):
        return ('%r has no valid host after %s:// (a host name or address, and an optional port 1-65535)'
                % (value, scheme))
    return None


def _named_problems(values, what, problem_of, skip_none=False):
    """``['<name> <rule>']`` for each ``{name: value}`` that ``problem_of`` refuses, in the mapping's order."""
    if not isinstance(values, dict):
        raise ValueError('%ss must be a mapping of variable name to %s, got %s'
                         % (what.lower(), what, type(values).__name__))
    return ['%s %s' % (name, problem) for name, problem in
            ((name, problem_of(value)) for name, value in values.items() if not (skip_none and value is None))
            if problem]


def path_problems(paths, owned=True, private=False):
    """``['<name> <rule>']`` for each ``{name: path}`` that ``path_problem`` refuses, in the mapping's order."""
    return _named_problems(paths, 'path', lambda path: path_problem(path, owned=owned, private=private))


def url_problems(urls, allow_http=False, allow_variable=None):
    """``['<name> <rule>']`` for each ``{name: url}`` that ``url_problem`` refuses, in the mapping's order; a None
    URL (one the role is not given) is skipped."""
    allow_http = boolean(allow_http, strict=True)
    return _named_problems(urls, 'URL', lambda url: url_problem(url, allow_http, allow_variable), skip_none=True)


def from_pattern_problems(patterns):
    """``['[<index>] <rule>']`` for each entry of a ``from=`` list that ``from_pattern_problem`` refuses."""
    if not isinstance(patterns, list):
        raise ValueError('the from= patterns must be a list, got %s' % type(patterns).__name__)
    return ['[%d] %s' % (index, problem) for index, problem in enumerate(map(from_pattern_problem, patterns)) if problem]
