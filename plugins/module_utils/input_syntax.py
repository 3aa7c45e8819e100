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
# what the kernel refuses in a netdev name (dev_valid_name), plus what breaks the files that name it: | joins the
# alternatives of a udev match (KERNEL=="a|b"), a leading ! negates a systemd-networkd Name= match
_IFNAME_FORBIDDEN = re.compile(r'[/:\s"\'\\*?\[\]#;$`|!]')


def label_problem(value):
    """A DNS label (RFC 1123): a rail name, one part of a host name."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    if not _LABEL_RE.fullmatch(value):
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
    if not _MAC_RE.fullmatch(value):
        return '%r is not a MAC address (six hex pairs separated by colons)' % value
    if int(value[:2], 16) & 1 or value.replace(':', '').strip('0') == '':
        return '%r is a multicast or all-zero MAC, which no NIC has' % value
    return None


# The FHS directories and their well-known children that a role must never create, chown, chmod, empty or install
# into as its own (what it owns it may replace wholesale), and that no network file system may be mounted over (the
# system's files there would be hidden), except MOUNTABLE_SYSTEM_DIRS. /etc's children are the ones whose files the
# system reads by directory (ssh, systemd units, udev rules, profile.d, sysctl.d, the package sources...): a role's
# own directory directly under /etc (/etc/hpcfabric) is fine.
SYSTEM_DIRS = frozenset([
    '/', '/bin', '/boot', '/boot/efi', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/libx32', '/lost+found',
    '/media', '/mnt', '/opt', '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp',
    '/usr', '/usr/bin', '/usr/include', '/usr/lib', '/usr/lib32', '/usr/lib64', '/usr/libexec', '/usr/libx32',
    '/usr/local', '/usr/local/bin', '/usr/local/etc', '/usr/local/include', '/usr/local/lib', '/usr/local/lib64',
    '/usr/local/sbin', '/usr/local/share', '/usr/local/src', '/usr/sbin', '/usr/share', '/usr/src',
    '/lib/modules', '/lib/systemd', '/lib/udev', '/usr/lib/modules', '/usr/lib/systemd', '/usr/lib/udev',
    '/var', '/var/cache', '/var/lib', '/var/local', '/var/lock', '/var/log', '/var/mail', '/var/opt', '/var/run',
    '/var/spool', '/var/tmp', '/dev/shm',
    '/etc/alternatives', '/etc/apt', '/etc/apt/keyrings', '/etc/apt/sources.list.d', '/etc/apt/trusted.gpg.d',
    '/etc/cron.d', '/etc/default', '/etc/dnf', '/etc/init.d', '/etc/ld.so.conf.d', '/etc/modprobe.d',
    '/etc/modules-load.d', '/etc/netplan', '/etc/network', '/etc/NetworkManager',
    '/etc/NetworkManager/system-connections', '/etc/pam.d', '/etc/pki', '/etc/profile.d', '/etc/security',
    '/etc/security/limits.d', '/etc/ssh', '/etc/ssl', '/etc/sudoers.d', '/etc/sysconfig', '/etc/sysctl.d',
    '/etc/systemd', '/etc/systemd/network', '/etc/systemd/system', '/etc/tmpfiles.d', '/etc/udev',
    '/etc/udev/rules.d', '/etc/yum.repos.d'])
# system directories a site mounts a network file system on routinely (NFS homes on /home, data on /srv, shares under
# /mnt or /media): a mount point, never a role's own directory. /opt and /usr/local are not among them: the roles
# install there (HPC-X, the RoCE boot script), and a mount over them would hide it.
MOUNTABLE_SYSTEM_DIRS = frozenset(['/home', '/media', '/mnt', '/srv'])
# kernel file systems: nothing of a role's belongs there
_VIRTUAL_TREES = ('/proc/', '/sys/', '/dev/')
# directories every user can write to: a private directory under one can be raced or read
_SHARED_TREES = ('/tmp/', '/var/tmp/', '/dev/shm/')
# what a path may not hold: it reaches unit files (where % starts a systemd specifier), profile.d, modulefiles and
# MCA files as it is
_PATH_UNSAFE = re.compile(r'[\s"\'\\$`;&|<>*?\[\]{}#%\x00-\x1f\x7f]')


def normal_path(value):
    """``value`` as the kernel resolves it, without following links: no trailing or repeated slash, no ``.``, each
    ``..`` taken with the component before it (posixpath keeps a leading ``//``, which Linux reads as ``/``)."""
    return '/' + posixpath.normpath(value).lstrip('/')


def system_dir_problem(value, mount=False):
    """None, or why the absolute path ``value`` (normalised first) is a system directory or under /proc, /sys or /dev.

    ``mount``: it is a mount point, which may be one of ``MOUNTABLE_SYSTEM_DIRS``; otherwise a directory a role owns.
    """
    path = normal_path(value)
    if path.startswith(_VIRTUAL_TREES) or (path in SYSTEM_DIRS and not (mount and path in MOUNTABLE_SYSTEM_DIRS)):
        if mount:
            return ('%r is a system directory or under /proc, /sys or /dev: a mount over it would hide what the system '
                    'keeps there' % value)
        return '%r is a system directory or under /proc, /sys or /dev, which the role would take over' % value
    return None


def path_problem(value, owned=True, private=False):
    """An absolute, normalised path without blanks, quotes or shell, glob or comment characters.

    ``owned``: the role creates, changes the owner or mode of, empties or mounts over it, so it is not a system
    directory or under /proc, /sys or /dev. ``private``: it holds secrets, so it is not under a world-writable
    directory either.
    """
    if not isinstance(value, str) or not value:
        return 'must be a non-empty string, got %r' % (value,)
    if _PATH_UNSAFE.search(value) or not value.isprintable():
        return '%r holds a blank, quote, control, shell, glob, comment or systemd specifier (%%) character' % value
    if not value.startswith('/') or posixpath.normpath(value) != value or value.startswith('//'):
        return '%r is not an absolute normalised path (no //, ., .. or trailing /)' % value
    if owned and system_dir_problem(value):
        return system_dir_problem(value)
    if private and value.startswith(_SHARED_TREES):
        return '%r is under a directory every user can write to, which no secret belongs in' % value
    return None


def path_settings_problems(settings, paths):
    """``[(name, rule broken)]`` for each ``(name, owned)`` of ``paths`` whose setting ``settings`` holds (not None)
    and ``path_problem`` refuses: a directory the role owns when ``owned``, else a file it writes."""
    return [(name, problem) for name, problem in
            ((name, settings.get(name) is not None and path_problem(settings[name], owned=owned)) for name, owned in paths)
            if problem]


def address_or_hostname_problem(value):
    """An IP address or a host name, as a node is reached and listed in known_hosts."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if hostname_problem(value):
        return '%r is not an IP address or host name' % (value,)
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


def url_host_problem(value):
    """The host of a URL a role builds as ``https://<value>:<port>/...``: a host name, an IPv4 address or an IPv6
    address in brackets, and nothing else: a ``/``, ``?`` or ``#`` would end the host early, an ``@`` make what comes
    before it user information, a ``:`` start a port, a blank or line break end the URL."""
    if not isinstance(value, str) or not value:
        return 'must be a non-empty string, got %r' % (value,)
    try:
        bare_ipv6 = ipaddress.ip_address(value).version == 6
    except ValueError:
        bare_ipv6 = False
    if bare_ipv6:
        return '%r is an IPv6 address without brackets: its colons would read as a port; write [%s]' % (value, value)
    match = _URL_HOST_PORT.fullmatch(value)
    if not match or match.group(3) is not None or not _host_port_ok(value):
        return ('%r is not a host name, an IPv4 address or an IPv6 address in brackets (a /, ?, #, @, :, blank or '
                'line break would change the URL built from it)' % (value,))
    return None


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


# a login name as useradd takes it by default (no upper case, no leading digit or hyphen)
_ACCOUNT_RE = re.compile(r'^[a-z_][a-z0-9_-]{0,31}$')


def account_problem(value, allow_root=False, allow_variable=None):
    """The account MPI jobs run as: a login name; root only when ``allow_root`` (every node's root would then log
    in to every other without a password)."""
    if not isinstance(value, str) or not _ACCOUNT_RE.fullmatch(value):
        return '%r is not a login name (lower-case letters, digits, _ and -, at most 32, not starting with a digit or -)' % (value,)
    if value == 'root' and not allow_root:
        return ("'root' would let every node's root log in to every other without a password; run MPI jobs as an "
                "ordinary account, or set %s: true" % (allow_variable or 'allow_root'))
    return None


# the LNet network types of Lustre's LNDs: socklnd tcp, o2iblnd o2ib, kfilnd kfi, gnilnd gni, efalnd efa
_LNET_TYPES = ('tcp', 'o2ib', 'kfi', 'gni', 'efa')
_LNET_RE = re.compile(r'^(?P<net>[a-z][a-z0-9]{0,15})\((?P<ifaces>[^()]*)\)(?P<cpts>\[[0-9]{1,4}(?:,[0-9]{1,4})*\])?$')


def lnet_network_parts(value):
    """``(net, [interfaces], cpts or None)`` of one LNet network spec (``o2ib0(ib0,ib1)[0,1]``); None when
    ``lnet_network_problem`` has one."""
    if lnet_network_problem(value):
        return None
    match = _LNET_RE.fullmatch(value)
    return match.group('net'), match.group('ifaces').split(','), match.group('cpts')


def lnet_network_problem(value):
    """One LNet network as ``networks=`` (modprobe) and lnetctl take it: ``o2ib0(ib0)``, ``tcp1(eth0,eth1)[0,1]``."""
    if not isinstance(value, str):
        return 'must be a string, got %s' % type(value).__name__
    match = _LNET_RE.fullmatch(value)
    if not match or match.group('net').rstrip('0123456789') not in _LNET_TYPES \
            or any(ifname_problem(name) for name in match.group('ifaces').split(',')):
        return ('%r is not an LNet network: a type (%s) with an optional number, then its interfaces in '
                'parentheses, e.g. o2ib0(ib0) or tcp1(eth0,eth1)' % (value, ', '.join(_LNET_TYPES)))
    return None


_UCX_DEVICE_RE = re.compile(r'^[A-Za-z0-9_.-]{1,64}(?::[0-9]{1,3})?$')
_UCX_TRANSPORT_RE = re.compile(r'^\^?[a-z][a-z0-9_]{0,31}$')


def ucx_device_problem(value):
    """One entry of ``UCX_NET_DEVICES``: an RDMA ``device:port``, a netdev name or ``all``."""
    if not isinstance(value, str) or not _UCX_DEVICE_RE.fullmatch(value):
        return '%r is not a UCX device (an RDMA device:port such as mlx5_0:1, a netdev name or all)' % (value,)
    return None


def ucx_transport_problem(value):
    """One entry of ``UCX_TLS``: a transport or alias name, ``^`` to exclude."""
    if not isinstance(value, str) or not _UCX_TRANSPORT_RE.fullmatch(value):
        return '%r is not a UCX transport name (such as rc, ud, tcp, sm, cuda_copy; ^ to exclude)' % (value,)
    return None


_MCA_NAME_RE = re.compile(r'^[a-z][a-z0-9_]{0,127}$')


def mca_param_problem(name, value):
    """One line of Open MPI's MCA parameter file: ``name = value``; the value ends at the line's end."""
    if not isinstance(name, str) or not _MCA_NAME_RE.fullmatch(name):
        return '%r is not an MCA parameter name (lower-case letters, digits and _)' % (name,)
    if isinstance(value, (list, dict)) or value is None:
        return '%s: the value must be a string or a number, got %r' % (name, value)
    if not str(value).isprintable() or not str(value).strip():
        return '%s: the value %r is empty or holds a line break or control character' % (name, value)
    return None


# the rules named_problems applies by name; mca_param takes each (name, value) pair of a mapping
_RULES = {'account': account_problem, 'from_pattern': from_pattern_problem, 'lnet_network': lnet_network_problem,
          'ucx_device': ucx_device_problem, 'ucx_transport': ucx_transport_problem, 'mca_param': mca_param_problem}


def named_problems(values, rule, **options):
    """``[(label, rule broken)]`` for the ``{variable: value}`` mapping under one rule of ``_RULES``.

    A list value is checked entry by entry (label ``name[index]``), a mapping under ``mca_param`` pair by pair
    (label ``name``), anything else as one value; None values are left out (unset).
    """
    if not isinstance(values, dict):
        raise ValueError('values must be a mapping of variable name to value, got %s' % type(values).__name__)
    if rule not in _RULES:
        raise ValueError('rule must be one of %s, got %r' % (', '.join(sorted(_RULES)), rule))
    check = _RULES[rule]
    found = []
    for name, value in values.items():
        if value is None:
            continue
        if rule == 'mca_param':
            pairs = value.items() if isinstance(value, dict) else [(None, value)]
            found.extend((name, problem) for problem in (check(key, item) for key, item in pairs) if problem)
        elif isinstance(value, list):
            found.extend(('%s[%d]' % (name, index), problem) for index, problem in
                         enumerate(check(entry, **options) for entry in value) if problem)
        else:
            found.extend((name, problem) for problem in [check(value, **options)] if problem)
    return found


# inside a double-quoted Tcl word these substitute: $var, [command] and backslash escapes
_TCL_SPECIAL = re.compile(r'([\\\[\]$"])')


def tcl_quote(value):
    """``value`` as one double-quoted Tcl word that reads back as the same string: no variable or command
    substitution (a modulefile is Tcl, and ``setenv X [exec ...]`` would run on every ``module load``)."""
    text = str(value)
    if not text.isprintable():
        raise ValueError('a modulefile value must be one printable line, got %r' % (text,))
    return '"%s"' % _TCL_SPECIAL.sub(r'\\\1', text)


def authorized_key_options(sources):
    """The ``from="..."`` option of an authorized_keys line for ``sources`` (addresses, CIDR networks, host names),
    or None for no restriction; a source that ``from_pattern_problem`` refuses is an error, so no entry can widen
    the list, close the quote or add an option such as ``command=``."""
    if not isinstance(sources, list):
        raise ValueError('the key\'s sources must be a list, got %s' % type(sources).__name__)
    problems = [problem for problem in map(from_pattern_problem, sources) if problem]
    if problems:
        raise ValueError('; '.join(problems))
    return 'from="%s"' % ','.join(sources) if sources else None
