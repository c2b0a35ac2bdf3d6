"""A TCP relay from a local port to another, as ``ssh -L LOCAL:127.0.0.1:REMOTE`` makes one: the
browser reaches the server on a port that is not the server's own."""

from __future__ import annotations

import socket
import threading


class Relay:
    """Forward every connection to ``127.0.0.1:port``, byte for byte, from a new local port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self._listener.close()
        for s in self._sockets:
            s.close()
