#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The network test's world, built as root, then network.sh run in it through modes.sh in
# one of the three modes. Nothing reaches the machine's real network: everything runs in
# a network namespace of our own (the test's "host", H) whose only routes lead to
# namespaces we make:
#   P "public": 198.51.100.10/24 and 203.0.113.10 (documentation ranges), HTTP :8080, a UDP
#     echo :9999, a DNS responder on 198.51.100.53:53 (H's resolv.conf names it, through
#     /etc/netns/H/resolv.conf, which `ip netns exec` binds over /etc/resolv.conf)
#   V "private": 10.99.0.10, 172.16.5.10, 192.168.77.10, 100.64.1.10, 169.254.169.254,
#     HTTP :8080, UDP echo :9999
#   H itself: HTTP on 127.0.0.1:8081 and on 0.0.0.0:8082 (its own 198.51.100.1, 10.99.0.1)
# and IPv6 (H has an IPv6 default route, so pasta carries IPv6):
#   P: 2001:db8:1::10/64 and 2001:db8:2::10 (documentation), HTTP [::]:8080 "public"
#   V: fd00:99::10/64 (unique local), HTTP [::]:8080 "private"
#   H: 2001:db8:1::1, fe80::1 (link-local, the address pasta's IPv6 gateway has) on the
#     link to P, fd00:99::1 on the link to V; HTTP [::1]:8081 and [::]:8082
# Controls (the private servers answer from H; a rootless `--network` with /dev/net/tun
# 0600 fails fast) go to /tmp/ts-net-env/controls, which network.sh turns into TAP.
#
# usage: network-env.sh MODE BUILD_DIR SOURCE_DIR PROBE
set -u
mode=$1 build=$2 src=$3 probe=${4:-}
user=${TS_TEST_USER:-tsbx-test}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root to build the test's network namespaces"; exit 0; }
for t in ip python3 runuser; do
	command -v $t >/dev/null || { echo "1..0 # SKIP $t missing"; exit 0; }
done
H=tsn-h-$$ P=tsn-p-$$ V=tsn-v-$$
env_dir=/tmp/ts-net-env
tun_mode=$(stat -c %a /dev/net/tun 2>/dev/null)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del $H 2>/dev/null; ip netns del $P 2>/dev/null; ip netns del $V 2>/dev/null
	rm -rf "/etc/netns/$H" "$env_dir"
	[ -n "$tun_mode" ] && chmod "$tun_mode" /dev/net/tun
}
trap cleanup EXIT
rm -rf "$env_dir"; mkdir -m 755 "$env_dir"
ctl() { echo "$*" >>"$env_dir/controls"; }

ip netns add $H && ip netns add $P && ip netns add $V || { echo "1..0 # SKIP cannot add network namespaces"; exit 0; }
for n in $H $P $V; do ip -n $n link set lo up; done
ip link add tsnh0 netns $H type veth peer name tsnp0 netns $P
ip link add tsnh1 netns $H type veth peer name tsnv0 netns $V
ip -n $H addr add 198.51.100.1/24 dev tsnh0
ip -n $H addr add 10.99.0.1/24 dev tsnh1
ip -n $P addr add 198.51.100.10/24 dev tsnp0
ip -n $P addr add 198.51.100.53/32 dev tsnp0
ip -n $P addr add 203.0.113.10/32 dev tsnp0
ip -n $V addr add 10.99.0.10/24 dev tsnv0
for a in 172.16.5.10 192.168.77.10 100.64.1.10 169.254.169.254; do ip -n $V addr add $a/32 dev tsnv0; done
for n in "$H tsnh0" "$H tsnh1" "$P tsnp0" "$V tsnv0"; do set -- $n; ip -n $1 link set $2 up; done
ip -n $H addr add 2001:db8:1::1/64 dev tsnh0 nodad
ip -n $H addr add fe80::1/64 dev tsnh0 nodad
ip -n $H addr add fd00:99::1/64 dev tsnh1 nodad
ip -n $P addr add 2001:db8:1::10/64 dev tsnp0 nodad
ip -n $P addr add 2001:db8:2::10/128 dev tsnp0 nodad
ip -n $V addr add fd00:99::10/64 dev tsnv0 nodad
ip -n $H route add default via 198.51.100.10
ip -n $H route add 203.0.113.10/32 via 198.51.100.10
for a in 172.16.5.10 192.168.77.10 100.64.1.10 169.254.169.254; do ip -n $H route add $a/32 via 10.99.0.10; done
ip -n $H -6 route add default via 2001:db8:1::10
ip -n $P -6 route add default via 2001:db8:1::1
ip -n $V -6 route add default via fd00:99::1
ip -n $P route add default via 198.51.100.1
ip -n $V route add default via 10.99.0.1
ip netns exec $H sysctl -qw net.ipv4.ip_forward=0
# H leads nowhere real: its interfaces are lo and our two veths, its default route ours
links=$(ip -n $H -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
defroute=$(ip -n $H route show default)
defroute6=$(ip -n $H -6 route show default | awk '{print $1, $2, $3, $4, $5}')
if [ "$links" != "lo tsnh0 tsnh1 " ] || [ "$defroute" != "default via 198.51.100.10 dev tsnh0 " ] ||
	[ "$defroute6" != "default via 2001:db8:1::10 dev tsnh0" ]; then
	echo "1..1"; echo "not ok 1 - the test host namespace is not isolated (links: $links; $defroute; $defroute6)"; exit 1
fi
mkdir -p "/etc/netns/$H"
echo "nameserver 198.51.100.53" >"/etc/netns/$H/resolv.conf"

serve() { # NS ADDR PORT NAME
	ip netns exec "$1" python3 "$here/network-servers.py" http "$2" "$3" "$4" &
	pids+=($!)
}
serve $P 0.0.0.0 8080 public
serve $V 0.0.0.0 8080 private
serve $H 127.0.0.1 8081 host-loopback
serve $H 0.0.0.0 8082 host
serve $P :: 8080 public
serve $V :: 8080 private
serve $H ::1 8081 host-loopback
serve $H :: 8082 host
ip netns exec $P python3 "$here/network-servers.py" udp 0.0.0.0 9999 public & pids+=($!)
ip netns exec $V python3 "$here/network-servers.py" udp 0.0.0.0 9999 private & pids+=($!)
ip netns exec $P python3 "$here/network-servers.py" dns 198.51.100.53 53 198.51.100.10 & pids+=($!)
sleep 1
# controls: every server answers where it is reachable without the sandbox
for t in 198.51.100.10:8080:public 203.0.113.10:8080:public 10.99.0.10:8080:private \
	172.16.5.10:8080:private 169.254.169.254:8080:private 192.168.77.10:8080:private \
	100.64.1.10:8080:private 127.0.0.1:8081:host-loopback 198.51.100.1:8082:host 10.99.0.1:8082:host \
	2001:db8:1::10/8080/public 2001:db8:2::10/8080/public fd00:99::10/8080/private \
	::1/8081/host-loopback 2001:db8:1::1/8082/host fe80::1%tsnh0/8082/host fd00:99::1/8082/host; do
	if [[ $t == */* ]]; then IFS=/ read -r a p want <<<"$t"; else IFS=: read -r a p want <<<"$t"; fi
	got=$(ip netns exec $H python3 "$here/network-servers.py" get "$a" "$p" 2>&1)
	ctl "CONTROL $([ "$got" = "$want" ] && echo PASS || echo FAIL) $a:$p answers from the test host ($got)"
done

stage_bin=$(mktemp -d /tmp/ts-net-bin-XXXXXX); chmod 755 "$stage_bin"
cp "$build/toren-sandbox" "$build/toren-sandbox-helper" "$build/toren-sandbox-init" "$stage_bin/"
chmod -R a+rX "$stage_bin"
pids+=()
if [ "$mode" != root ] && [ -e /dev/net/tun ]; then
	# a rootless --network where /dev/net/tun is 0600 fails at once, saying the fix
	chmod 0600 /dev/net/tun
	st=$(mktemp -d /tmp/ts-net-st-XXXXXX); chown "$user:" "$st"
	out=$(cd /tmp && runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/tmp TOREN_SANDBOX_ROOT="$st" \
		TOREN_SANDBOX_POLICY_DIR="$src/policy" timeout 20 "$stage_bin/toren-sandbox" run --network -- true 2>&1)
	rc=$?
	ctl "TUN $([ $rc = 125 ] && [[ $out == *"chmod 0666 /dev/net/tun"* ]] && echo PASS || echo FAIL) rootless --network with /dev/net/tun 0600 fails (125) naming the fix ($rc: ${out:0:160})"
	out=$(cd /tmp && runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME=/tmp TOREN_SANDBOX_ROOT="$st" \
		"$stage_bin/toren-sandbox" doctor --no-live 2>&1)
	ctl "TUN $([[ $out == *"/dev/net/tun"*"chmod 0666"* ]] && echo PASS || echo FAIL) doctor reports /dev/net/tun and its fix"
	rm -rf "$st"
	# Debian's usual mode, for the rest of the run (restored at the end)
	chmod 0666 /dev/net/tun
fi
rm -rf "$stage_bin"
chmod 644 "$env_dir/controls"
ip netns exec $H "$here/modes.sh" "$mode" "$build" "$src" "$here/network.sh" "$probe"
