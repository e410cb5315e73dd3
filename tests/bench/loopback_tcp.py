#!/usr/bin/env python3
"""The iperf-like bound for gRPC records on this machine: one TCP stream over
loopback, 1 MiB sends into recv_into, for --seconds; prints bytes/s.
(No iperf here: Debian's is not among the project's packages.)"""
import argparse
import socket
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    chunk = bytes(1 << 20)
    stop = time.monotonic() + args.seconds

    def send():
        out = socket.create_connection(server.getsockname())
        while time.monotonic() < stop:
            out.sendall(chunk)
        out.close()

    sender = threading.Thread(target=send)
    sender.start()
    conn, _ = server.accept()
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    received = 0
    start = time.monotonic()
    while True:
        n = conn.recv_into(view)
        if n == 0:
            break
        received += n
    seconds = time.monotonic() - start
    sender.join()
    print(f"loopback TCP, one stream: {received / seconds / 1e9:.2f} GB/s "
          f"({received >> 20} MiB in {seconds:.2f} s)")


if __name__ == "__main__":
    main()
