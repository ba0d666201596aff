#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The name proxy test's world, built as root, then network-proxy.sh run in it through
# modes.sh in one of the three modes. Nothing reaches the machine's real network: all of
# it runs in a network namespace of our own (the test's "host", H) whose only links lead
# to namespaces we make, and the proxy resolves names through H's resolv.conf
# (/etc/netns/H/resolv.conf, which `ip netns exec` binds over /etc/resolv.conf): a DNS
# server of ours on H's own loopback, with a search domain (corp.test) under which it
# has names the proxy must never reach by a search (it resolves absolute names):
#   P "public": 198.51.100.10/24: HTTP :80, a raw TCP server :443 (reports the bytes of
#     a ClientHello), TLS :8443 when openssl can make a certificate
#   V "private": 10.99.0.10: HTTP :80
#   H itself: HTTP on 127.0.0.1:80
# Controls go to /tmp/ts-proxy-env/controls, which network-proxy.sh turns into TAP.
#
# usage: network-proxy-env.sh MODE BUILD_DIR SOURCE_DIR PROBE
set -u
mode=$1 build=$2 src=$3 probe=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to build the test's network namespaces"; exit 0; }
for t in ip python3; do
	command -v $t >/dev/null || { echo "1..0 # SKIP $t missing"; exit 0; }
done
H=tsq-h-$$ P=tsq-p-$$ V=tsq-v-$$
env_dir=/tmp/ts-proxy-env
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del $H 2>/dev/null; ip netns del $P 2>/dev/null; ip netns del $V 2>/dev/null
	rm -rf "/etc/netns/$H" "$env_dir"
}
trap cleanup EXIT
rm -rf "$env_dir"; mkdir -m 755 "$env_dir"
ctl() { echo "$*" >>"$env_dir/controls"; }

ip netns add $H && ip netns add $P && ip netns add $V || { echo "1..0 # SKIP cannot add network namespaces"; exit 0; }
for n in $H $P $V; do ip -n $n link set lo up; done
ip link add tsqh0 netns $H type veth peer name tsqp0 netns $P
ip link add tsqh1 netns $H type veth peer name tsqv0 netns $V
ip -n $H addr add 198.51.100.1/24 dev tsqh0
ip -n $H addr add 10.99.0.1/24 dev tsqh1
ip -n $P addr add 198.51.100.10/24 dev tsqp0
ip -n $V addr add 10.99.0.10/24 dev tsqv0
for n in "$H tsqh0" "$H tsqh1" "$P tsqp0" "$V tsqv0"; do set -- $n; ip -n $1 link set $2 up; done
ip -n $H route add default via 198.51.100.10
ip -n $P route add default via 198.51.100.1
ip -n $V route add default via 10.99.0.1
ip netns exec $H sysctl -qw net.ipv4.ip_forward=0
links=$(ip -n $H -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
if [ "$links" != "lo tsqh0 tsqh1 " ]; then
	echo "1..1"; echo "not ok 1 - the test host namespace is not isolated (links: $links)"; exit 1
fi
mkdir -p "/etc/netns/$H"
printf 'nameserver 127.0.0.1\nsearch corp.test\noptions timeout:1 attempts:1\n' >"/etc/netns/$H/resolv.conf"
printf '127.0.0.1 localhost\n' >"/etc/netns/$H/hosts"
# gone.example.test and `short` exist only below the search domain: found by a search,
# they would reach the public server
cat >"$env_dir/zone" <<ZONE
pub.example.test 198.51.100.10
dot.example.test 198.51.100.10
a.wild.example.test 198.51.100.10
b.c.wild.example.test 198.51.100.10
wild.example.test 198.51.100.10
nope.example.test 198.51.100.10
priv.example.test 10.99.0.10
loop.example.test 127.0.0.1
meta.example.test 169.254.169.254
mixed.example.test 198.51.100.10 10.99.0.10
gone.example.test.corp.test 198.51.100.10
short.corp.test 198.51.100.10
ZONE
ip netns exec $H python3 "$here/network-servers.py" dns-map 127.0.0.1 53 "$env_dir/zone" & pids+=($!)

ip netns exec $P python3 "$here/network-servers.py" http 0.0.0.0 80 public & pids+=($!)
ip netns exec $V python3 "$here/network-servers.py" http 0.0.0.0 80 private & pids+=($!)
ip netns exec $H python3 "$here/network-servers.py" http 127.0.0.1 80 host-loopback & pids+=($!)
ip netns exec $P python3 "$here/proxy-helper.py" raw-serve 0.0.0.0 443 public & pids+=($!)
if command -v openssl >/dev/null &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pub.example.test \
		-keyout "$env_dir/key.pem" -out "$env_dir/cert.pem" >/dev/null 2>&1; then
	ip netns exec $P python3 "$here/proxy-helper.py" tls-serve 0.0.0.0 8443 \
		"$env_dir/cert.pem" "$env_dir/key.pem" public-tls & pids+=($!)
	touch "$env_dir/tls"
fi
sleep 1
# controls: the servers answer, and H resolves the names from its hosts file
for t in 198.51.100.10:80:public 10.99.0.10:80:private 127.0.0.1:80:host-loopback; do
	IFS=: read -r a p want <<<"$t"
	got=$(ip netns exec $H python3 "$here/network-servers.py" get "$a" "$p" 2>&1)
	ctl "CONTROL $([ "$got" = "$want" ] && echo PASS || echo FAIL) $a:$p answers from the test host ($got)"
done
got=$(ip netns exec $H getent ahostsv4 short | awk '{print $1}' | sort -u | tr '\n' ' ')
ctl "CONTROL $([ "$got" = "198.51.100.10 " ] && echo PASS || echo FAIL) the test host finds \`short\` by its search domain ($got)"
got=$(ip netns exec $H getent ahostsv4 mixed.example.test | awk '{print $1}' | sort -u | tr '\n' ' ')
ctl "CONTROL $([ "$got" = "10.99.0.10 198.51.100.10 " ] && echo PASS || echo FAIL) the test host resolves a name to a public and a private address ($got)"
chmod -R a+rX "$env_dir"
ip netns exec $H "$here/modes.sh" "$mode" "$build" "$src" "$here/network-proxy.sh" "$probe"
