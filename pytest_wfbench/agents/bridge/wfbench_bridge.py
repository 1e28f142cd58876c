"""Run inside an agent session's sandbox, which has no network: listens on the
sandbox's own loopback and relays each connection to the harness's API proxy
through a unix socket mounted into the sandbox. Stdlib only.

    python wfbench_bridge.py SOCKET PORT

The process forks once it is listening, so when the parent exits the port is
ready; the child serves until the sandbox's PID namespace ends.
"""

import contextlib
import os
import socket
import sys
import threading


def pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    pipe(client, upstream)


def main() -> None:
    path, port = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork():
        os._exit(0)
    os.setsid()
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main()
