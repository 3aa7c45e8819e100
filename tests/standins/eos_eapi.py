# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""TEST ONLY: a stand-in for an Arista EOS switch's eAPI, for the tests of the switch_qos role. Not a switch.

It answers ``POST /command-api`` (JSON-RPC ``runCmds``, HTTP basic authentication) the way eAPI does for what
``arista.eos`` sends over ``ansible.netcommon.httpapi`` (see its ``httpapi/eos.py`` and
``module_utils/network/eos/eos.py``): ``show version`` and ``show hostname`` as JSON, ``show configuration sessions``,
``show running-config`` (also ``interfaces NAME`` and ``section REGEX``), ``show startup-config``, configuration
sessions (``configure session NAME``, config commands, ``show session-config diffs``, ``commit``, ``abort``),
``configure`` and ``copy running-config startup-config``.

It keeps a running configuration the way EOS shows one, for the QoS commands the role sends and the lines of the
configuration it starts from: three spaces a level, ``!`` between sections, a DSCP map line only for DSCPs that are
not in their default traffic class (EOS lists several DSCPs of one class on one line), a transmit queue's
``priority strict`` (the default) left out. A command it does not know fails as eAPI does (JSON-RPC error 1002,
``Invalid input``). Every request is recorded (``requests``), and so is every configuration command (``pushed``) and
every commit (``commits``), so the tests can assert what was sent. ``drift`` holds configuration commands it applies
after every commit: a switch that does not keep what it was given, or someone changing it meanwhile; ``unknown``
the commands a platform does not have (a 7280R has ``tx-queue``, no ``uc-tx-queue``).

Run by hand: ``python tests/standins/eos_eapi.py --port 8080`` (user admin, password admin), then point an inventory
host at it with ``ansible_connection: ansible.netcommon.httpapi``, ``ansible_network_os: arista.eos.eos``,
``ansible_httpapi_port: 8080``.
"""
from __future__ import annotations

import argparse
import base64
import copy
import difflib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# EOS's default DSCP to traffic class map (DSCP 0-7 to 1, 8-15 to 0, then eight DSCPs per class): not shown
DEFAULT_DSCP_TC = dict((dscp, {0: 1, 1: 0}.get(dscp // 8, dscp // 8)) for dscp in range(64))

INITIAL_CONFIG = """! Command: show running-config
! device: {hostname} (cEOSLab, EOS-4.32.2F)
!
! boot system flash:/cEOS-lab.swi
!
no aaa root
!
username admin privilege 15 role network-admin secret sha512 {secret}
!
hostname {hostname}
!
tacacs-server host 192.0.2.50 key 7 {secret}
!
interface Ethernet1/1
   description to gpu-node01 rail 0
   mtu 1500
   no switchport
!
interface Ethernet2/1
   description to gpu-node02 rail 0
   no switchport
   uc-tx-queue 3
      no priority
      bandwidth percent 30
!
interface Management1
   ip address 192.0.2.10/24
!
management api http-commands
   no shutdown
!
end
"""


class CommandError(Exception):
    """A command eAPI refuses: its JSON-RPC error ``code``, and the message as the error's ``errors`` entry."""

    def __init__(self, message, code=1002):
        super().__init__(message)
        self.code = code


# --- the configuration ---------------------------------------------------------------------------------------------
# (pattern, key): two lines with the same key set the same thing, so the later replaces the earlier one, and
# `no <line>` removes the line with the key of <line>
_INTERFACE_COMMANDS = [
    (r'mtu \d+', 'mtu'),
    (r'qos trust (dscp|cos)', 'qos trust'),
    (r'priority-flow-control on', 'priority-flow-control'),
    (r'priority-flow-control priority [0-7] no-drop', None),
    (r'description .+', 'description'),
    (r'(no )?switchport( .+)?', None),
    (r'ip address \S+', 'ip address'),
    (r'shutdown', 'shutdown'),
]
_QUEUE_COMMANDS = [
    (r'no priority', 'priority'),
    (r'priority strict', 'priority'),
    (r'bandwidth percent \d+', 'bandwidth percent'),
    (r'random-detect ecn minimum-threshold \d+ (bytes|kbytes|mbytes|segments) maximum-threshold \d+ '
     r'(bytes|kbytes|mbytes|segments)( max-mark-probability \d+)?( weight \d+)?', 'random-detect ecn'),
    (r'random-detect ecn count', 'random-detect ecn count'),
]
_NO_FORMS = {
    # `no X` as EOS takes it, in interface mode: the key it removes
    'interface': [(r'no mtu', 'mtu'), (r'no qos trust', 'qos trust'), (r'no priority-flow-control', 'priority-flow-control'),
                  (r'no priority-flow-control priority ([0-7])', 'priority-flow-control priority {0} no-drop'),
                  (r'no description', 'description'), (r'no shutdown', 'shutdown')],
    'queue': [(r'no bandwidth percent', 'bandwidth percent'), (r'no random-detect ecn', 'random-detect ecn')],
}
_QUEUE_HEADER = re.compile(r'^(uc-tx-queue|tx-queue) [0-7]$')
_DSCP_MAP = re.compile(r'^qos map dscp (\d+(?: \d+)*) to traffic-class ([0-7])$')
_NO_DSCP_MAP = re.compile(r'^no qos map dscp (\d+(?: \d+)*)(?: to traffic-class [0-7])?$')


def _key(line, table):
    for pattern, key in table:
        if re.fullmatch(pattern, line):
            return key or line
    return None


class Node:
    """One configuration line and the lines under it."""

    def __init__(self, line, children=None):
        self.line = line
        self.children = children or []

    def child(self, line):
        for node in self.children:
            if node.line == line:
                return node
        return None


def _parse(text):
    root = Node('')
    stack = [(-1, root)]
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith('!') or stripped == 'end':
            continue
        indent = len(raw) - len(raw.lstrip(' '))
        while stack[-1][0] >= indent:
            stack.pop()
        node = Node(stripped)
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


class Config:
    """A running configuration: the DSCP map apart (EOS shows it grouped by class), every other section as lines."""

    def __init__(self, text, hostname):
        self.hostname = hostname
        self.dscp = {}
        self.root = Node('')
        for node in _parse(text).children:
            if node.line.startswith('qos map dscp '):
                self.map_dscp(node.line)
            else:
                self.root.children.append(node)

    def map_dscp(self, line):
        match = _DSCP_MAP.match(line)
        if not match:
            raise CommandError("Invalid input (at token 3: '%s')" % line)
        for dscp in (int(value) for value in match.group(1).split()):
            if dscp > 63:
                raise CommandError('Invalid input (DSCP %d is not 0-63)' % dscp)
            self.dscp[dscp] = int(match.group(2))
            if self.dscp[dscp] == DEFAULT_DSCP_TC[dscp]:
                del self.dscp[dscp]

    def interface(self, name, create=True):
        line = 'interface ' + name
        node = self.root.child(line)
        if node is None and create:
            node = Node(line)
            last = max([i for i, n in enumerate(self.root.children) if n.line.startswith('interface ')], default=-1)
            self.root.children.insert(last + 1, node)
        return node

    def text(self):
        lines = ['! Command: show running-config', '! device: %s (cEOSLab, EOS-4.32.2F)' % self.hostname, '!']
        dscp_lines = ['qos map dscp %s to traffic-class %d' % (' '.join(str(d) for d in sorted(dscps)), tc)
                      for tc, dscps in sorted(self._dscp_by_class().items())]
        last_interface = max([i for i, n in enumerate(self.root.children) if n.line.startswith('interface ')], default=-1)
        for index, node in enumerate(self.root.children):
            lines.extend(_render(node, 0))
            lines.append('!')
            if index == last_interface and dscp_lines:
                lines.extend(dscp_lines + ['!'])
        if last_interface < 0 and dscp_lines:
            lines.extend(dscp_lines + ['!'])
        lines.append('end')
        return '\n'.join(lines) + '\n'

    def _dscp_by_class(self):
        classes = {}
        for dscp, tc in self.dscp.items():
            classes.setdefault(tc, []).append(dscp)
        return classes


def _render(node, depth):
    """A section as EOS shows it: its own lines first, then its sections in order, each after a `!`; a transmit queue
    section with nothing but defaults in it is not shown."""
    out = ['   ' * depth + node.line]
    out.extend('   ' * (depth + 1) + child.line for child in node.children if not _is_section(child))
    for child in sorted((child for child in node.children if _is_section(child) and child.children), key=_section_order):
        out.append('   ' * (depth + 1) + '!')
        out.extend(_render(child, depth + 1))
    return out


def _is_section(node):
    return bool(node.children) or bool(_QUEUE_HEADER.match(node.line))


def _section_order(node):
    words = node.line.split()
    return (words[0], int(words[1])) if _QUEUE_HEADER.match(node.line) else (node.line, 0)


class ConfigMode:
    """Config commands applied to a Config, with EOS's modes: a command the current mode does not know is tried in
    the mode above it, up to the global configuration mode."""

    def __init__(self, config):
        self.config = config
        self.stack = []   # [] global; [interface node]; [interface node, queue node]

    def run(self, command):
        command = ' '.join(command.split())
        if command == 'exit':
            if self.stack:
                self.stack.pop()
            return
        while True:
            if self._try(command):
                return
            if not self.stack:
                raise CommandError("Invalid input (at token 0: '%s')" % command.split()[0])
            self.stack.pop()

    def _try(self, command):
        mode = ['global', 'interface', 'queue'][len(self.stack)]
        if mode == 'global':
            if command.startswith('interface '):
                self.stack = [self.config.interface(canonical(command.split(None, 1)[1]))]
                return True
            no_map = _NO_DSCP_MAP.match(command)
            if no_map:
                for dscp in no_map.group(1).split():
                    self.config.dscp.pop(int(dscp), None)
                return True
            if command.startswith('qos map dscp '):
                self.config.map_dscp(command)
                return True
            return False
        node = self.stack[-1]
        if mode == 'interface' and _QUEUE_HEADER.match(command):
            queue = node.child(command)
            if queue is None:
                queue = Node(command)
                node.children.append(queue)
            self.stack.append(queue)
            return True
        table = _INTERFACE_COMMANDS if mode == 'interface' else _QUEUE_COMMANDS
        for pattern, key in _NO_FORMS[mode]:
            match = re.fullmatch(pattern, command)
            if match:
                key = key.format(*match.groups())
                node.children = [child for child in node.children if _key(child.line, table) != key]
                return True
        key = _key(command, table)
        if key is None:
            return False
        node.children = [child for child in node.children if _key(child.line, table) != key]
        if command != 'priority strict':   # the default: EOS does not show it
            node.children.append(Node(command))
        if mode == 'queue':
            order = [key for _pattern, key in _QUEUE_COMMANDS]
            node.children.sort(key=lambda child: order.index(_key(child.line, table)) if _key(child.line, table) in order
                               else len(order))
        return True


# --- eAPI ------------------------------------------------------------------------------------------------------------
class Eapi:
    """The switch: its running and startup configurations, pending sessions, and what it was sent."""

    def __init__(self, hostname='switch1', user='admin', password='admin', secret='$6$standin$secret', config=None):
        self.hostname, self.user, self.password = hostname, user, password
        text = (config or INITIAL_CONFIG).format(hostname=hostname, secret=secret)
        self.running = Config(text, hostname)
        self.startup = self.running.text()
        self.sessions = {}
        self.requests = []   # (cmds, format) of every runCmds call
        self.pushed = []     # every configuration command, in sessions or not
        self.commits = []    # session names committed
        self.drift = []      # configuration commands applied after every commit
        self.unknown = []    # regular expressions of configuration commands this platform does not have
        self.lock = threading.Lock()

    def configure(self, commands):
        """Apply configuration commands to the running configuration directly (a test's own change)."""
        mode = ConfigMode(self.running)
        for command in commands:
            mode.run(command)

    def run_cmds(self, cmds, fmt='json'):
        """Run one runCmds request; return its results, or raise (index, CommandError, results so far)."""
        with self.lock:
            self.requests.append((cmds, fmt))
            results, state = [], {'mode': None, 'session': None}
            for index, cmd in enumerate(cmds):
                command = cmd['cmd'] if isinstance(cmd, dict) else cmd
                try:
                    results.append(self._run(' '.join(str(command).split()), fmt, state))
                except CommandError as exc:
                    raise RequestError(index, command, exc, results) from exc
            return results

    def _run(self, command, fmt, state):
        text = fmt == 'text'
        if command.startswith('show '):
            return self._show(command, fmt, state)
        if command == 'enable':
            return {'output': ''} if text else {}
        if command in ('configure', 'configure terminal'):
            state['mode'], state['session'] = ConfigMode(self.running), None
            return {'output': ''} if text else {}
        if command.startswith('configure session '):
            name = command.split()[2]
            if name not in self.sessions:
                self.sessions[name] = copy.deepcopy(self.running)
            state['mode'], state['session'] = ConfigMode(self.sessions[name]), name
            return {'output': ''} if text else {}
        if command == 'copy running-config startup-config':
            self.startup = self.running.text()
            return {'output': 'Copy completed successfully.\n'} if text else {'messages': ['Copy completed successfully.']}
        if state['mode'] is None:
            raise CommandError("Invalid input (at token 0: '%s')" % command.split()[0])
        if command in ('commit', 'abort'):
            if state['session'] is None:
                raise CommandError('Not in a configuration session')
            session = self.sessions.pop(state['session'])
            if command == 'commit':
                self.running = session
                self.commits.append(state['session'])
                self.configure(self.drift)
            state['mode'], state['session'] = None, None
            return {'output': ''} if text else {}
        if command == 'end':
            state['mode'] = None
            return {'output': ''} if text else {}
        self.pushed.append(command)
        if any(re.match(pattern, command) for pattern in self.unknown):
            raise CommandError("Invalid input (at token 0: '%s')" % command.split()[0])
        state['mode'].run(command)
        return {'output': ''} if text else {}

    def _show(self, command, fmt, state):
        if command == 'show version' and fmt == 'json':
            return {'modelName': 'cEOSLab', 'version': '4.32.2F', 'serialNumber': 'STANDIN', 'architecture': 'x86_64'}
        if command == 'show hostname' and fmt == 'json':
            return {'hostname': self.hostname, 'fqdn': self.hostname}
        if fmt != 'text':
            raise CommandError('This is an unconverted command', code=1003)
        if command == 'show configuration sessions':
            rows = ''.join('   %-24s pending\n' % name for name in sorted(self.sessions))
            return {'output': 'Maximum number of completed sessions: 1\nMaximum number of pending sessions: 5\n\n'
                              '   Name                     State\n   ------------------------ -------\n' + rows}
        if command == 'show running-config':
            return {'output': self.running.text()}
        if command.startswith('show running-config interfaces '):
            node = self.running.interface(canonical(command.split()[3]), create=False)
            return {'output': '\n'.join(_render(node, 0)) + '\n' if node else ''}
        if command.startswith('show running-config section '):
            regex = re.compile(command.split(None, 3)[3])
            keep = [block for block in self.running.text().split('\n!\n') if regex.search(block)]
            return {'output': '\n'.join(block.strip('\n') for block in keep if not block.startswith('! Command')) + '\n'}
        if command == 'show startup-config':
            return {'output': self.startup}
        if command in ('show session-config diffs', 'show session-config'):
            if state['session'] is None:
                raise CommandError('Not in a configuration session')
            session = self.sessions[state['session']].text()
            if command == 'show session-config':
                return {'output': session}
            diff = difflib.unified_diff(self.running.text().splitlines(), session.splitlines(),
                                        'system:/running-config', 'session:/%s-session-config' % state['session'],
                                        lineterm='')
            return {'output': '\n'.join(diff) + '\n'}
        raise CommandError("Invalid input (at token 1: '%s')" % command.split()[1])


def canonical(name):
    for full in ('Ethernet', 'Port-Channel', 'Management'):
        match = re.match(r'^([A-Za-z-]+)(\d.*)$', name)
        if match and full.lower().startswith(match.group(1).lower()):
            return full + match.group(2)
    return name


class RequestError(Exception):
    def __init__(self, index, command, error, results):
        super().__init__(str(error))
        self.index, self.command, self.error, self.results = index, command, error, results


class Handler(BaseHTTPRequestHandler):
    """POST /command-api: JSON-RPC 2.0, method runCmds, as eAPI answers it."""

    def _answer(self, status, body, content_type='application/json'):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 - the name http.server calls
        eapi = self.server.eapi
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length)
        expected = 'Basic ' + base64.b64encode(('%s:%s' % (eapi.user, eapi.password)).encode()).decode()
        if self.headers.get('Authorization') != expected:
            return self._answer(401, '<html><body>Unable to authenticate</body></html>', 'text/html')
        if self.path != '/command-api':
            return self._answer(404, '<html><body>Not Found</body></html>', 'text/html')
        try:
            request = json.loads(body)
            params = request['params']
        except (ValueError, KeyError, TypeError):
            return self._answer(200, {'jsonrpc': '2.0', 'id': None, 'error': {'code': -32700, 'message': 'Parse error'}})
        try:
            results = eapi.run_cmds(params['cmds'], params.get('format', 'json'))
        except RequestError as exc:
            message = "CLI command %d of %d '%s' failed: invalid command" % (exc.index + 1, len(params['cmds']), exc.command)
            data = exc.results + [{'errors': [str(exc.error)]}]
            return self._answer(200, {'jsonrpc': '2.0', 'id': request.get('id'),
                                      'error': {'code': exc.error.code, 'message': message, 'data': data}})
        return self._answer(200, {'jsonrpc': '2.0', 'id': request.get('id'), 'result': results})

    def do_GET(self):  # noqa: N802
        self._answer(405, '<html><body>Method Not Allowed</body></html>', 'text/html')

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


def serve(eapi, host='127.0.0.1', port=0):
    """Start the stand-in in a thread; returns the server (``server.server_address[1]`` is its port)."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.eapi = eapi
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description='TEST ONLY: an Arista eAPI stand-in (not a switch)')
    parser.add_argument('--port', type=int, default=8080)
    parser.add_argument('--hostname', default='switch1')
    args = parser.parse_args()
    server = ThreadingHTTPServer(('127.0.0.1', args.port), Handler)
    server.eapi = Eapi(hostname=args.hostname)
    print('TEST ONLY eAPI stand-in on http://127.0.0.1:%d/command-api (admin/admin)' % args.port)
    server.serve_forever()


if __name__ == '__main__':
    main()
