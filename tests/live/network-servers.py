# SPDX-License-Identifier: Apache-2.0
# The network test's tiny servers and its in-sandbox client (network-env.sh, network.sh).
#   http ADDR PORT NAME      answers every GET with NAME (ADDR IPv4 or IPv6)
#   udp ADDR PORT NAME       answers every datagram with NAME
#   dns ADDR PORT IP         answers every A query with IP
#   dns-map ADDR PORT FILE   a zone from FILE (lines `name ip...`, IPv4): A queries get its
#                            addresses, a name not in it NXDOMAIN; each query is logged to
#                            FILE.log (`name`), so a test can see what was asked
#   get ADDR PORT            prints the body of GET / (exit 1 on failure)
#   probe KIND ...           inside a sandbox: `reach ADDR PORT WANT`, `refused ADDR PORT`,
#                            `bound ADDR PORT` (SO_BINDTODEVICE eth0), `pktinfo ADDR PORT`
#                            (UDP with IP_PKTINFO naming eth0), `udp ADDR PORT WANT`,
#                            `dns NAME WANT` (through the sandbox's resolver),
#                            `dns-raw ADDR NAME WANT`; prints PASS or FAIL and why
import errno
import http.server
import socket
import socketserver
import struct
import sys
import time


def http_serve(addr, port, name):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = name.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    class S(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        # an IPv6 address (`::`, `::1`) serves IPv6 only: the IPv4 server of the same
        # port is another process
        address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET

        def server_bind(self):
            if self.address_family == socket.AF_INET6:
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            super().server_bind()

    with S((addr, int(port)), H) as s:
        s.serve_forever()


def udp_serve(addr, port, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    while True:
        _, peer = s.recvfrom(2048)
        s.sendto(name.encode(), peer)


def dns_query(name, qid=0x1234):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)


def dns_serve(addr, port, ip):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    while True:
        q, peer = s.recvfrom(2048)
        if len(q) < 12:
            continue
        qid, = struct.unpack(">H", q[:2])
        end = 12
        while end < len(q) and q[end] != 0:
            end += q[end] + 1
        question = q[12:end + 5]
        qtype = struct.unpack(">H", q[end + 1:end + 3])[0] if end + 3 <= len(q) else 0
        answers = 1 if qtype == 1 else 0
        r = struct.pack(">HHHHHH", qid, 0x8180, 1, answers, 0, 0) + question
        if answers:
            r += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(ip)
        s.sendto(r, peer)


def dns_map_serve(addr, port, zone_file):
    zone = {}
    with open(zone_file) as f:
        for line in f:
            words = line.split()
            if words:
                zone[words[0].lower().rstrip(".")] = words[1:]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    while True:
        q, peer = s.recvfrom(2048)
        if len(q) < 12:
            continue
        qid, = struct.unpack(">H", q[:2])
        end, labels = 12, []
        while end < len(q) and q[end] != 0:
            labels.append(q[end + 1:end + 1 + q[end]].decode("ascii", "replace"))
            end += q[end] + 1
        if end + 5 > len(q):
            continue
        name = ".".join(labels).lower()
        qtype = struct.unpack(">H", q[end + 1:end + 3])[0]
        with open(zone_file + ".log", "a") as log:
            log.write(name + "\n")
        question = q[12:end + 5]
        ips = zone.get(name)
        answers = [ip for ip in ips or [] if qtype == 1]
        flags = 0x8180 if ips is not None else 0x8183
        r = struct.pack(">HHHHHH", qid, flags, 1, len(answers), 0, 0) + question
        for ip in answers:
            r += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(ip)
        s.sendto(r, peer)


def get(addr, port, timeout=3):
    s = socket.create_connection((addr, int(port)), timeout=timeout)
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        c = s.recv(4096)
        if not c:
            break
        data += c
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.0 200") and not head.startswith(b"HTTP/1.1 200"):
        raise OSError("bad reply %r" % head[:40])
    return body.decode()


def refused(addr, port, bind=False):
    """A connection attempt that must fail at once; returns (ok, detail)."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    if bind:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
    t = time.monotonic()
    try:
        s.connect((addr, int(port)))
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        return False, "connected, got %r" % s.recv(100)
    except OSError as e:
        dt = time.monotonic() - t
        good = e.errno in (errno.EACCES, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EPERM)
        if addr.startswith(("127.", "::ffff:127.")) or addr == "::1":
            good = good or e.errno == errno.ECONNREFUSED  # the sandbox's own loopback
        if bind and fam == socket.AF_INET6:
            # the netfilter rules answer a bound socket's TCP with a reset (their ICMPv6
            # error would not reach it)
            good = good or e.errno == errno.ECONNREFUSED
        if "%" in addr:
            # link-local: the egress interface has no link-local address to send from
            good = good or e.errno in (errno.EINVAL, errno.EADDRNOTAVAIL)
        if isinstance(e, socket.timeout) or e.errno == errno.ETIMEDOUT:
            return False, "timed out in %.3f s" % dt
        return good and dt < 1.0, "%s in %.3f s" % (errno.errorcode.get(e.errno, e.errno), dt)


def udp_reply(addr, port, pktinfo=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.5)
    try:
        if pktinfo:
            idx = socket.if_nametoindex("eth0")
            info = struct.pack("=I4s4s", idx, b"\0" * 4, b"\0" * 4)
            s.sendmsg([b"hi"], [(socket.IPPROTO_IP, getattr(socket, "IP_PKTINFO", 8), info)], 0,
                       (addr, int(port)))
        else:
            s.sendto(b"hi", (addr, int(port)))
        return s.recv(100).decode()
    except OSError as e:
        return "error %s" % errno.errorcode.get(e.errno, e.errno)


def probe(kind, args):
    if kind == "reach":
        try:
            got = get(args[0], args[1])
        except OSError as e:
            got = "error %s" % e
        return got == args[2], got
    if kind == "refused":
        return refused(args[0], args[1])
    if kind == "bound":
        return refused(args[0], args[1], bind=True)
    if kind == "udp":
        got = udp_reply(args[0], args[1])
        return got == args[2], got
    if kind == "pktinfo":
        got = udp_reply(args[0], args[1], pktinfo=True)
        return not got.startswith("private"), got
    if kind == "dns":
        try:
            got = socket.gethostbyname(args[0])
        except OSError as e:
            got = "error %s" % e
        return got == args[1], got
    if kind == "dns-raw":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        try:
            s.sendto(dns_query(args[1]), (args[0], 53))
            r = s.recv(512)
            got = socket.inet_ntoa(r[-4:])
        except OSError as e:
            got = "error %s" % e
        return got == args[2], got
    return False, "unknown probe " + kind


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "http":
        http_serve(*args)
    elif cmd == "udp":
        udp_serve(*args)
    elif cmd == "dns":
        dns_serve(*args)
    elif cmd == "dns-map":
        dns_map_serve(*args)
    elif cmd == "get":
        try:
            print(get(args[0], args[1]))
        except OSError as e:
            print("error %s" % e)
            sys.exit(1)
    elif cmd == "probe":
        # probe KIND ARGS... [-- KIND ARGS...]...
        cases, cur = [], []
        for a in args:
            if a == "--":
                cases.append(cur)
                cur = []
            else:
                cur.append(a)
        cases.append(cur)
        for c in cases:
            ok, detail = probe(c[0], c[1:])
            print("CASE %s %s %s: %s" % ("PASS" if ok else "FAIL", c[0], " ".join(c[1:]), detail))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
