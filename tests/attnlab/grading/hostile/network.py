"""Network: a TCP connection to the grading machine and to the internet, and a DNS lookup.

The test listens on 127.0.0.1 at the port below (the grading machine's loopback); a connection
that reaches it, or anywhere, sends the answers out.
"""
import socket

for _address in (("127.0.0.1", int("@PORT@")), ("1.1.1.1", 53), ("8.8.8.8", 443)):
    try:
        with socket.create_connection(_address, timeout=2) as _s:
            _s.sendall(b"hostile notebook was here")
    except OSError:
        pass
try:
    socket.getaddrinfo("pypi.org", 443)
except OSError:
    pass
