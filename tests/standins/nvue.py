# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""TEST ONLY: a stand-in for NVIDIA Cumulus Linux's NVUE REST API (https://SWITCH:8765/nvue_v1/).

No Cumulus switch can be had here, so the switch_qos role's Cumulus path runs against this: an HTTPS server that
keeps an applied configuration tree and revisions the way NVUE does. It is not NVUE: it knows no schema, applies a
revision by copying it, and exists for the tests only. Never point a deployment at it.

    GET   /nvue_v1/<path>?rev=applied|<id>   the subtree at <path> of the applied tree or of a revision
    POST  /nvue_v1/revision                  a new revision, a copy of the applied tree: {"<id>": {"state": "pending"}}
    PATCH /nvue_v1/<path>?rev=<id>           merges the JSON body into the revision at <path> (null unsets a key)
    PATCH /nvue_v1/revision/<id>             {"state": "apply", ...}: the revision becomes the applied tree
    GET   /nvue_v1/revision/<id>             {"<id>": {"state": "pending" | "applied" | ...}}

Every request is kept in ``requests`` (method, path, body); every PATCH and every apply also in ``pushes`` and, with
``--record FILE``, as one JSON line in FILE, so a test can assert what was pushed. ``apply_outcome`` makes an apply
end ``invalid`` or stay ``applying`` for the role's error paths; ``drift(path, value)`` changes the applied tree behind
the role's back, as an operator's ``nv set ...; nv config apply`` would.

As a program (for trying the role by hand): python3 tests/standins/nvue.py --port 8765 --cert CERT --key KEY [--tree TREE.json]
[--record PUSHES.jsonl] [--user cumulus --password PASSWORD].
"""
from __future__ import annotations

import argparse
import base64
import copy
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

PREFIX = '/nvue_v1'


class NvueStandin(object):
    """The state of one stand-in switch and the HTTPS server that exposes it."""

    def __init__(self, tree=None, user='cumulus', password='', record=None):
        self.applied = copy.deepcopy(tree) if tree else {}
        self.revisions = {}
        self.requests = []
        self.pushes = []
        self.user = user
        self.password = password
        self.record = record
        self.apply_outcome = 'applied'
        self.lock = threading.Lock()
        self.server = None

    # --- what a test does to the switch ----------------------------------------------------------------------
    def drift(self, path, value):
        """Set ``value`` at ``path`` (``qos/mapping/default-global/dscp/26/switch-priority``) of the applied tree."""
        with self.lock:
            *parents, leaf = [unquote(part) for part in path.strip('/').split('/')]
            node = self.applied
            for part in parents:
                node = node.setdefault(part, {})
            if value is None:
                node.pop(leaf, None)
            else:
                node[leaf] = value

    def start(self, cert, key, address='127.0.0.1', port=0):
        standin = self

        class Handler(_Handler):
            switch = standin

        self.server = ThreadingHTTPServer((address, port), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    # --- what the API does -----------------------------------------------------------------------------------
    def handle(self, method, target, body):
        url = urlsplit(target)
        path = url.path[len(PREFIX):] if url.path.startswith(PREFIX) else None
        rev = parse_qs(url.query).get('rev', ['applied'])[0]
        self.requests.append((method, target, body))
        if path is None:
            return 404, {'title': 'Not Found'}
        parts = [unquote(part) for part in path.strip('/').split('/') if part]
        with self.lock:
            if parts[:1] == ['revision']:
                return self._revision(method, parts[1:], body)
            if method == 'GET':
                tree = self.applied if rev == 'applied' else self.revisions.get(rev, {}).get('tree')
                if tree is None:
                    return 404, {'title': 'Not Found', 'detail': 'no revision %s' % rev}
                return 200, _subtree(tree, parts)
            if method == 'PATCH':
                revision = self.revisions.get(rev)
                if revision is None or revision['state'] != 'pending':
                    return 400, {'title': 'Bad Request', 'detail': 'revision %s cannot be changed' % rev}
                _merge(revision['tree'], parts, body)
                self._push({'op': 'patch', 'revision': rev, 'path': '/' + '/'.join(parts), 'body': body})
                return 200, _subtree(revision['tree'], parts)
        return 405, {'title': 'Method Not Allowed'}

    def _revision(self, method, parts, body):
        if method == 'POST' and not parts:
            rev = 'changeset/cumulus/2026-01-01_00.00.00_%04X' % (len(self.revisions) + 1)
            self.revisions[rev] = {'state': 'pending', 'tree': copy.deepcopy(self.applied)}
            return 200, {rev: {'state': 'pending'}}
        rev = '/'.join(parts)
        revision = self.revisions.get(rev)
        if revision is None:
            return 404, {'title': 'Not Found', 'detail': 'no revision %s' % rev}
        if method == 'GET':
            return 200, {rev: {'state': revision['state']}}
        if method == 'PATCH' and isinstance(body, dict) and body.get('state') == 'apply':
            revision['state'] = self.apply_outcome
            if self.apply_outcome == 'applied':
                self.applied = copy.deepcopy(revision['tree'])
            self._push({'op': 'apply', 'revision': rev, 'state': revision['state']})
            return 200, {rev: {'state': revision['state']}}
        return 400, {'title': 'Bad Request'}

    def _push(self, entry):
        self.pushes.append(entry)
        if self.record:
            with open(self.record, 'a') as handle:
                handle.write(json.dumps(entry, sort_keys=True) + '\n')


def _subtree(tree, parts):
    node = tree
    for part in parts:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return {}
    return node


def _merge(tree, parts, body):
    node = tree
    for part in parts:
        node = node.setdefault(part, {})
    _merge_into(node, body)


def _merge_into(node, body):
    for key, value in (body or {}).items():
        if value is None:
            node.pop(key, None)
        elif isinstance(value, dict) and value and isinstance(node.get(key), dict):
            _merge_into(node[key], value)
        else:
            node[key] = copy.deepcopy(value)


class _Handler(BaseHTTPRequestHandler):
    switch = None

    def _handle(self):
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return self._answer(400, {'title': 'Bad Request', 'detail': 'body is not JSON'})
        wanted = 'Basic ' + base64.b64encode(('%s:%s' % (self.switch.user, self.switch.password)).encode()).decode()
        if self.headers.get('Authorization') != wanted:
            self.switch.requests.append((self.command, self.path, body))
            return self._answer(401, {'title': 'Unauthorized'})
        status, answer = self.switch.handle(self.command, self.path, body)
        return self._answer(status, answer)

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _handle

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


def main():
    parser = argparse.ArgumentParser(description='TEST ONLY stand-in for the NVUE REST API')
    parser.add_argument('--address', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=8765)
    parser.add_argument('--cert', required=True)
    parser.add_argument('--key', required=True)
    parser.add_argument('--tree', help='JSON file of the initial applied tree')
    parser.add_argument('--record', help='append every PATCH and apply to this file as JSON lines')
    parser.add_argument('--user', default='cumulus')
    parser.add_argument('--password', required=True)
    args = parser.parse_args()
    tree = json.load(open(args.tree)) if args.tree else {}
    standin = NvueStandin(tree, args.user, args.password, args.record)
    port = standin.start(args.cert, args.key, args.address, args.port)
    print('TEST NVUE stand-in on https://%s:%d%s/' % (args.address, port, PREFIX), flush=True)
    threading.Event().wait()


if __name__ == '__main__':
    main()
