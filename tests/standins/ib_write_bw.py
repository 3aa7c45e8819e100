# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""TEST ONLY: a stand-in for perftest's ib_write_bw, over TCP instead of RDMA.

It takes the options the validate role's isolation passes (``--ib-dev``, ``--ib-port``, ``--size``, ``--duration``,
``--port``, ``--gid-index``, ``--use_cuda``, ``--report_gbits``, ``--CPU-freq``, extra ``--qp``), then behaves as
ib_write_bw does between its two ends: without an address it is the server, listening on ``--port`` for one client;
with one it is the client, which connects (failing at once, as perftest does, when nothing listens), writes
``--size`` messages for ``--duration`` seconds and prints perftest's report, its bandwidth the TCP bytes it moved.
A device named ``mlx5_dead`` is missing, as a NIC that is gone. It proves what runs where, in which order and how
the results come back; it measures no RDMA link.
"""

import argparse
import socket
import sys
import time

RULE = '-' * 87


def options(argv):
    parser = argparse.ArgumentParser(prog='ib_write_bw')
    parser.add_argument('--ib-dev', required=True)
    parser.add_argument('--ib-port', type=int, required=True)
    parser.add_argument('--size', type=int, default=65536)
    parser.add_argument('--duration', type=int, default=5)
    parser.add_argument('--port', type=int, default=18515)
    parser.add_argument('--gid-index', type=int)
    parser.add_argument('--use_cuda', type=int)
    parser.add_argument('--qp', type=int, default=1)
    parser.add_argument('--report_gbits', action='store_true')
    parser.add_argument('--CPU-freq', action='store_true')
    parser.add_argument('server', nargs='?')
    return parser.parse_args(argv)


def header(args):
    print(RULE)
    print('                    RDMA_Write BW Test')
    print(' Dual-port       : OFF\t\tDevice         : %s' % args.ib_dev)
    print(' Number of qps   : %d\t\tTransport type : IB' % args.qp)
    print(' GID index       : %s' % ('-' if args.gid_index is None else args.gid_index))
    print(RULE)


def serve(args):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('0.0.0.0', args.port))
        listener.listen(1)
        print('\n************************************\n* Waiting for client to connect... *\n'
              '************************************', flush=True)
        conn = listener.accept()[0]
        with conn:
            header(args)
            while conn.recv(1 << 20):
                pass
    print(RULE)
    return 0


def send(args):
    try:
        conn = socket.create_connection((args.server, args.port), timeout=5)
    except OSError:
        sys.stderr.write("Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection Unable "
                         'to init the socket connection\n' % (args.server, args.port))
        return 1
    message = b'\0' * args.size
    sent = 0
    with conn:
        header(args)
        start = time.monotonic()
        while time.monotonic() - start < args.duration:
            conn.sendall(message)
            sent += 1
        elapsed = time.monotonic() - start
    gbits = sent * args.size * 8 / elapsed / 1e9
    print(' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]')
    print(' %-10d %-16d %-18.2f %-20.2f %.6f' % (args.size, sent, 0.0, gbits, sent / elapsed / 1e6))
    print(RULE)
    return 0


def main(argv):
    args = options(argv)
    if args.ib_dev == 'mlx5_dead':
        sys.stderr.write(' Unable to find the Infiniband/RoCE device\n')
        return 1
    return send(args) if args.server else serve(args)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
