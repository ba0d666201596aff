# SPDX-License-Identifier: Apache-2.0
# The name proxy test's servers and in-sandbox client (network-proxy-env.sh, network-proxy.sh).
#   raw-serve ADDR PORT NAME         reads what a client sends first, answers
#                                    "NAME got N bytes" and closes
#   tls-serve ADDR PORT CERT KEY NAME  TLS; answers every request with an HTTP NAME
# Inside a sandbox (the proxy at 127.0.0.1:3128), each prints one line:
#   connect HOST PORT                the proxy's status and reason line
#   get HOST PORT                    CONNECT, then GET / through the tunnel: the body
#   hello HOST PORT SNI|-            CONNECT, then a TLS ClientHello naming SNI (made by
#                                    the ssl module, never completed): REPLY <answer> or
#                                    CLOSED (the proxy hung up without forwarding it)
#   tls HOST PORT SNI                CONNECT, then a real TLS session naming SNI and GET /
#   direct ADDR PORT                 a connection without the proxy: its errno's name
import errno
import socket
import socketserver
import ssl
import sys
import threading
import time

PROXY = ("127.0.0.1", 3128)


def raw_serve(addr, port, name):
    class H(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.settimeout(5)
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            self.request.sendall(("%s got %d bytes" % (name, len(data))).encode())

    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer((addr, int(port)), H) as s:
        s.serve_forever()


def tls_serve(addr, port, cert, key, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(16)

    def one(c):
        try:
            c.settimeout(5)
            t = ctx.wrap_socket(c, server_side=True)
            t.recv(4096)
            body = name.encode()
            t.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            t.close()
        except (OSError, ssl.SSLError):
            c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=one, args=(c,), daemon=True).start()


def tunnel(host, port):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
    return s, status, head


def connect(host, port):
    s, status, head = tunnel(host, port)
    body = b""
    if " 200 " not in status:
        s.settimeout(3)
        try:
            while True:
                c = s.recv(4096)
                if not c:
                    break
                body += c
        except OSError:
            pass
    print("%s | %s" % (status, body.decode(errors="replace").strip()))


def read_all(s):
    out = b""
    s.settimeout(5)
    try:
        while True:
            c = s.recv(4096)
            if not c:
                break
            out += c
    except OSError:
        pass
    return out


def get(host, port):
    s, status, _ = tunnel(host, port)
    if " 200 " not in status:
        print("NO TUNNEL " + status)
        return
    s.sendall(("GET / HTTP/1.0\r\nHost: %s\r\n\r\n" % host).encode())
    out = read_all(s)
    print(out.split(b"\r\n\r\n", 1)[-1].decode(errors="replace"))


def client_hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inb, outb, server_hostname=None if sni == "-" else sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outb.read()


def hello(host, port, sni):
    s, status, _ = tunnel(host, port)
    if " 200 " not in status:
        print("NO TUNNEL " + status)
        return
    s.sendall(client_hello(sni))
    out = read_all(s)
    print("REPLY " + out.decode(errors="replace") if out else "CLOSED")


def tls(host, port, sni):
    s, status, _ = tunnel(host, port)
    if " 200 " not in status:
        print("NO TUNNEL " + status)
        return
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET / HTTP/1.0\r\n\r\n")
        out = read_all(t)
        print(out.split(b"\r\n\r\n", 1)[-1].decode(errors="replace"))
    except (OSError, ssl.SSLError) as e:
        print("CLOSED %s" % type(e).__name__)


def direct(addr, port):
    t = time.monotonic()
    try:
        socket.create_connection((addr, int(port)), timeout=5).close()
        print("CONNECTED")
    except OSError as e:
        print("%s %.1fs" % (errno.errorcode.get(e.errno, str(e.errno)), time.monotonic() - t))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"raw-serve": raw_serve, "tls-serve": tls_serve, "connect": connect, "get": get,
     "hello": hello, "tls": tls, "direct": direct}[cmd](*args)


main()
