# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi role's source build steps on this machine.

fetch.yml through a stand-in HTTP proxy whose password the run must not print; source_build.yml on a tiny
autotools-shaped tarball: the configure flags come from the inventory (mpi_source_*_configure_extra, the prefix) and
each must reach configure as one argument, never parsed by a shell; each step's output goes to its log in the build
tree, and a failing step shows the log's last lines.
"""
from __future__ import annotations
import base64
import hashlib
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

PROXY_PASSWORD = 'proxy-password-that-must-not-be-printed'
TARBALL = b'not really a tarball'
FETCH = """    - name: Fetch a tarball the way the source flavour does
      ansible.builtin.include_role:
        name: hpcfabric.cluster.mpi
        tasks_from: fetch.yml
      vars:
        __mpi_fetch_name: mpi_source_ucx
        __mpi_fetch_url: http://downloads.example/ucx-1.0.tar.gz
        __mpi_fetch_checksum: "{{ checksum }}"
        __mpi_fetch_dest: "{{ dest }}"
"""


class FakeProxy(BaseHTTPRequestHandler):
    """An HTTP proxy that wants user:PROXY_PASSWORD and serves TARBALL for any URL; it records what it was asked."""

    def do_GET(self):  # pylint: disable=invalid-name
        self.server.requests.append((self.command, self.path))
        if self.headers.get('Proxy-Authorization') != 'Basic ' + base64.b64encode(
                f'user:{PROXY_PASSWORD}'.encode()).decode():
            self.send_response(407)
            self.send_header('Proxy-Authenticate', 'Basic realm="proxy"')
            self.end_headers()
            return
        self.send_response(200)
        self.send_header('Content-Length', str(len(TARBALL)))
        self.end_headers()
        if self.command == 'GET':
            self.wfile.write(TARBALL)

    do_HEAD = do_GET

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture
def proxy():
    server = ThreadingHTTPServer(('127.0.0.1', 0), FakeProxy)
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def fetch(local_play, tmp_path, server, *args, checksum=None, new_dir=False):
    dest = tmp_path / 'downloads' / 'ucx-1.0.tar.gz'
    if not new_dir:
        dest.parent.mkdir()
    proxy_url = f'http://user:{PROXY_PASSWORD}@127.0.0.1:{server.server_address[1]}'
    # -vv, not -vvv: at -vvv ansible-core prints every task's environment with the command that starts its module,
    # whatever no_log says (the role's argument spec warns of it)
    rc, out = local_play('node', FETCH, '-vv', *args, dest=str(dest),
                         checksum=checksum or 'sha256:' + hashlib.sha256(TARBALL).hexdigest(),
                         mpi_download_environment={'http_proxy': proxy_url})
    return rc, out, dest


def test_the_download_goes_through_the_proxy_printing_no_password(local_play, tmp_path, proxy):
    rc, out, dest = fetch(local_play, tmp_path, proxy)
    assert rc == 0, out
    assert dest.read_bytes() == TARBALL
    assert ('GET', 'http://downloads.example/ucx-1.0.tar.gz') in proxy.requests
    assert PROXY_PASSWORD not in out


def test_a_failed_download_says_why_printing_no_password(local_play, tmp_path, proxy):
    rc, out, dest = fetch(local_play, tmp_path, proxy, checksum='sha256:' + '0' * 64)
    assert rc != 0
    assert ('node: mpi_source_ucx_url: Download the tarball and check its checksum - mpi_source_ucx failed: '
            'The checksum for ') in out
    assert PROXY_PASSWORD not in out
    assert not dest.exists()


def test_check_mode_into_a_new_directory_asks_the_proxy_for_the_head_only(local_play, tmp_path, proxy):
    rc, out, dest = fetch(local_play, tmp_path, proxy, '--check', new_dir=True)
    assert rc == 0, out
    assert proxy.requests == [('HEAD', 'http://downloads.example/ucx-1.0.tar.gz')]
    assert not dest.parent.exists()
    assert PROXY_PASSWORD not in out


CONFIGURE = """#!/bin/sh
# records its arguments one per line, as configure would read them
printf '%s\\n' "$@" > configure.args
echo "configure: checking nothing"
"""
FAILING_CONFIGURE = """#!/bin/sh
printf '%s\\n' "$@" > configure.args
i=1
while [ $i -le 100 ]; do echo "configure line $i"; i=$((i + 1)); done
exit 3
"""
MAKEFILE = "all:\n\techo compiled > built\ninstall:\n\tcp built installed\n"

# what inventory values can hold: blanks, quotes, command substitution, a second command
HOSTILE_FLAGS = ['--prefix=/opt/hpc fabric', 'CFLAGS=-O2 -g', '--with-x=$(touch {marker})', "--it's; touch {marker}",
                 '`touch {marker}`']

BUILD = """    - name: Build the test package with the mpi role's build steps
      block:
        - ansible.builtin.include_role:
            name: hpcfabric.cluster.mpi
            tasks_from: source_build.yml
          vars:
            __mpi_build_name: pkg-1.0
            __mpi_build_tarball: "{{ tarball }}"
            __mpi_build_configure: "{{ flags }}"
      rescue:
        - name: Keep the failed step's result
          ansible.builtin.copy:
            content: "{{ {'task': ansible_failed_task.name, 'rc': ansible_failed_result.rc,
                          'stdout_lines': ansible_failed_result.stdout_lines} | to_json }}"
            dest: "{{ out }}/failed.json"
            mode: "0644"
"""


def tarball(tmp_path, configure):
    src = tmp_path / 'pkg-1.0'
    src.mkdir()
    (src / 'configure').write_text(configure)
    (src / 'configure').chmod(0o755)
    (src / 'Makefile').write_text(MAKEFILE)
    path = tmp_path / 'pkg-1.0.tar.gz'
    with tarfile.open(path, 'w:gz') as tar:
        tar.add(src, arcname='pkg-1.0')
    return path


@pytest.fixture
def build(os_play, tmp_path):
    def run(configure):
        build_dir = tmp_path / 'build'
        marker = tmp_path / 'a-shell-ran-a-flag'
        flags = [f.format(marker=marker) for f in HOSTILE_FLAGS]
        result = os_play(BUILD, {'node': ('debian12', {})}, tarball=str(tarball(tmp_path, configure)), flags=flags,
                         mpi_source_build_dir=str(build_dir), mpi_source_make_jobs=2)
        return result, build_dir / 'pkg-1.0', flags, marker
    return run


def test_configure_gets_every_flag_as_one_argument(build):
    run, tree, flags, marker = build(CONFIGURE)
    assert run.rc == 0, run.failed
    assert (tree / 'configure.args').read_text().splitlines() == flags
    assert not marker.exists()
    assert (tree / 'installed').read_text() == 'compiled\n'
    # each step's output is in its log, not in the task's result
    assert 'checking nothing' in (tree / 'hpcfabric-configure.log').read_text()
    assert 'echo compiled > built' in (tree / 'hpcfabric-make.log').read_text()
    assert 'cp built installed' in (tree / 'hpcfabric-install.log').read_text()


def test_a_failing_step_shows_the_end_of_its_log_and_keeps_the_tree(build):
    run, tree, flags, marker = build(FAILING_CONFIGURE)
    assert run.failed == ['The command exited with a non-zero return code.']
    failed = run.out['failed']
    assert failed['task'] == 'Configure - pkg-1.0'
    assert failed['rc'] == 3
    assert failed['stdout_lines'] == ['configure line %d' % i for i in range(61, 101)]
    assert len((tree / 'hpcfabric-configure.log').read_text().splitlines()) == 100
    assert (tree / 'configure.args').read_text().splitlines() == flags
    assert not marker.exists()
