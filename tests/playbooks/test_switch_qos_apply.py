# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""switch_qos applying the policy to a stand-in switch: an NVUE REST API on this machine (Cumulus) and SONiC's
``show`` and ``config`` commands as scripts on PATH.

A switch's configuration holds its secrets (TACACS keys, SNMP communities), and the NVUE requests its password: the
run, at -vvv, must print neither, and a failure must still say what failed.
"""
from __future__ import annotations
import base64
import json
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SECRET = 'tacacs-key-that-must-not-be-printed'
PASSWORD = 'nvue-password-that-must-not-be-printed'
REVISION = 'changeset/cumulus/2026-01-01_00.00.00_ABCD'
# a running configuration that differs from the policy (MTU) and holds a secret
RUNNING_NVUE = {'interface': {'swp1': {'link': {'mtu': 1500}}}, 'system': {'aaa': {'tacacs': {'secret': SECRET}}}}
RUNNING_CONFIG_DB = {'PORT': {'Ethernet0': {'mtu': '1500'}}, 'TACPLUS': {'global': {'passkey': SECRET}}}


# --- Cumulus: NVUE REST API --------------------------------------------------------------------------------------
class FakeNvue(BaseHTTPRequestHandler):
    """The requests apply_cumulus.yml makes, answered as NVUE does; ``server.final_state`` is the revision's end."""

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.requests.append((self.command, self.path, body))
        if self.headers.get('Authorization') != 'Basic ' + base64.b64encode(f'cumulus:{PASSWORD}'.encode()).decode():
            return self._answer(401, {'title': 'Unauthorized'})
        rev = '/nvue_v1/revision/' + REVISION.replace('/', '%2F')
        if (self.command, self.path) == ('GET', '/nvue_v1/?rev=applied'):
            return self._answer(200, RUNNING_NVUE)
        if (self.command, self.path) == ('POST', '/nvue_v1/revision'):
            return self._answer(200, {REVISION: {'state': 'pending'}})
        if self.command == 'PATCH' and self.path in (rev, '/nvue_v1/?rev=' + REVISION.replace('/', '%2F')):
            return self._answer(200, {})
        if (self.command, self.path) == ('GET', rev):
            return self._answer(200, {REVISION: {'state': self.server.final_state}})
        return self._answer(404, {'title': 'Not Found'})

    do_GET = do_POST = do_PATCH = _handle

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture
def nvue(tmp_path):
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=switch1',
                    '-keyout', str(key), '-out', str(cert)], check=True, capture_output=True)
    server = ThreadingHTTPServer(('127.0.0.1', 0), FakeNvue)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.requests, server.final_state = [], 'applied'
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


CUMULUS = """    - name: Apply the policy through NVUE
      ansible.builtin.include_role:
        name: hpcfabric.cluster.switch_qos
        tasks_from: apply_cumulus.yml
"""


def run_cumulus(local_play, server, password=PASSWORD):
    return local_play('switch1', CUMULUS, '-vvv', switch_qos_ports=['swp1'], switch_qos_nvue_host='127.0.0.1',
                      switch_qos_nvue_port=server.server_address[1], switch_qos_nvue_validate_certs=False,
                      switch_qos_nvue_password=password, switch_qos_nvue_apply_retries=3)


def test_cumulus_applies_the_policy_printing_no_secret(local_play, nvue):
    rc, out = run_cumulus(local_play, nvue)
    assert rc == 0, out
    assert [r[:2] for r in nvue.requests][:2] == [('GET', '/nvue_v1/?rev=applied'), ('POST', '/nvue_v1/revision')]
    patch = [body for method, path, body in nvue.requests if method == 'PATCH' and '?rev=' in path]
    assert patch and patch[0]['interface']['swp1']['link']['mtu'] == 9214
    assert SECRET not in out and PASSWORD not in out
    # the differences from the policy are still shown
    assert "path: /interface/swp1/link/mtu" in out


def test_cumulus_says_which_request_failed(local_play, nvue):
    rc, out = run_cumulus(local_play, nvue, password='wrong')
    assert rc != 0
    assert ('switch1: Read the applied NVUE configuration failed: Status code was 401 and not [200]: '
            'HTTP Error 401: Unauthorized') in out
    assert SECRET not in out


def test_cumulus_says_how_a_revision_ended(local_play, nvue):
    nvue.final_state = 'invalid'
    rc, out = run_cumulus(local_play, nvue)
    assert rc != 0
    assert f'NVUE revision {REVISION} is invalid, not applied' in out
    assert SECRET not in out and PASSWORD not in out


def test_cumulus_says_when_polling_gave_up(local_play, nvue):
    nvue.final_state = 'applying'
    rc, out = run_cumulus(local_play, nvue)
    assert rc != 0
    assert f'Wait until NVUE has finished applying the revision failed: revision {REVISION} still applying' in out


# --- SONiC: show and config --------------------------------------------------------------------------------------
SHOW = """#!/bin/sh
[ "$*" = "runningconfiguration all" ] || exit 2
cat "$(dirname "$0")/config_db.json"
"""
# config apply-patch prints the configuration it starts from; a patch it refuses ends with an Error line
CONFIG = """#!/bin/sh
bin="$(dirname "$0")"
case "$1" in
  apply-patch)
    cat "$bin/config_db.json"
    cp "$2" "$bin/applied.json"
    if [ -e "$bin/refuse" ]; then echo "Error: Given patch will produce invalid config" >&2; exit 1; fi ;;
  save) touch "$bin/saved" ;;
  *) exit 2 ;;
esac
"""
SONIC = """    - name: Apply the policy with config apply-patch, the stand-in commands first on PATH
      environment:
        PATH: "{{ fake_bin }}:{{ path }}"
      block:
        - name: Apply the policy
          ansible.builtin.include_role:
            name: hpcfabric.cluster.switch_qos
            tasks_from: apply_sonic.yml
"""


@pytest.fixture
def sonic(tmp_path, local_play):
    fake_bin = tmp_path / 'bin'
    fake_bin.mkdir()
    for name, text in (('show', SHOW), ('config', CONFIG)):
        (fake_bin / name).write_text(text)
        (fake_bin / name).chmod(0o755)
    (fake_bin / 'config_db.json').write_text(json.dumps(RUNNING_CONFIG_DB))

    def run(*args):
        return local_play('switch1', SONIC, '-vvv', *args, fake_bin=str(fake_bin), path=os.environ['PATH'],
                          switch_qos_ports=['Ethernet0'], ansible_become=False,
                          switch_qos_sonic_patch_path=str(tmp_path / 'patch.json'))
    return fake_bin, run


def test_sonic_applies_the_patch_printing_no_secret(sonic):
    fake_bin, run = sonic
    rc, out = run()
    assert rc == 0, out
    assert {'op': 'replace', 'path': '/PORT/Ethernet0/mtu', 'value': '9214'} in json.loads(
        (fake_bin / 'applied.json').read_text())
    assert (fake_bin / 'saved').exists()
    assert SECRET not in out


def test_sonic_says_why_the_patch_was_refused(sonic):
    fake_bin, run = sonic
    (fake_bin / 'refuse').touch()
    rc, out = run()
    assert rc != 0
    assert 'exited 1: Error: Given patch will produce invalid config' in out
    assert 'config apply-patch --dry-run' in out
    assert SECRET not in out
    assert not (fake_bin / 'saved').exists()


def test_sonic_says_why_the_configuration_was_not_read(sonic):
    fake_bin, run = sonic
    (fake_bin / 'show').write_text('#!/bin/sh\necho "Error: redis is not running" >&2\nexit 1\n')
    rc, out = run()
    assert rc != 0
    assert 'switch1: show runningconfiguration all exited 1: Error: redis is not running' in out


def test_sonic_check_mode_shows_the_differences_and_applies_nothing(sonic):
    fake_bin, run = sonic
    rc, out = run('--check')
    assert rc == 0, out
    assert 'path: /PORT/Ethernet0/mtu' in out
    assert not (fake_bin / 'applied.json').exists() and not (fake_bin / 'saved').exists()
    assert SECRET not in out
