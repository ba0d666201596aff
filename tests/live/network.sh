#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `network: true` (run/create --network, policy `network`), run by network-env.sh inside
# the test's own network namespace (see there for the addresses) through modes.sh. Proves:
# public hosts reachable over TCP and UDP, every private, loopback, link-local, CGNAT and
# metadata address and the host's own addresses refused at once, also for sockets bound to
# the interface (SO_BINDTODEVICE, IP_PKTINFO), DNS answered through the forwarder only on
# port 53, allow/deny rules, nothing changed by root inside, the default still `lo` only,
# slirp4netns as the fallback, and no egress process outliving its sandbox. IPv6 (the test
# host has an IPv6 default route): a public host reachable; unique local, link-local (also
# pasta's gateway fe80::1, which H has), ::1, the host's own, v4-mapped, NAT64 of a private
# IPv4 address and 6to4 refused at once, also for bound sockets; allow/deny rules; the
# same through slirp4netns (its host fd00::2, DNS fd00::3 and router fe80::2 refused).
# Connection counts in inspect.
set -u
. "$(dirname "$0")/lib.sh"
cli=$TS_CLI
srv=$(dirname "$0")/network-servers.py
code=$(cat "$srv")
cd /tmp || exit 1

while read -r kind verdict rest; do
	[ "$verdict" = PASS ] && tap_ok "$kind: $rest" || tap_not_ok "$kind: $rest"
done </tmp/ts-net-env/controls 2>/dev/null

# ours: the egress programs of this run's sandboxes (all carry our fixed address)
egress_procs() { ps -eo pid=,args= | grep -E '(pasta|slirp4netns) .*(169\.254\.1\.100|--cidr=169\.254\.1\.0/24)' | grep -v grep; }

# sandbox_probe DESC [RUN OPTIONS] -- PROBE CASES (network-servers.py probe syntax)
run_cases() {
	local desc=$1 opts=() out rc line
	shift
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	out=$(timeout 120 "$cli" run "${opts[@]}" -- python3 -c "$code" probe "$@" 2>&1)
	rc=$?
	[ $rc = 0 ] || { tap_not_ok "$desc: sandbox ran (exit $rc)"; tap_diag "$out"; return; }
	while IFS= read -r line; do
		case $line in
		"CASE PASS "*) tap_ok "$desc: ${line#CASE PASS }" ;;
		"CASE FAIL "*) tap_not_ok "$desc: ${line#CASE FAIL }" ;;
		*) tap_diag "$line" ;;
		esac
	done <<<"$out"
}

out=$(timeout 60 "$cli" run --network -- true 2>&1)
rc=$?
if [ $rc != 0 ]; then
	tap_skip_all "a --network sandbox cannot start here: $out"
	tap_done; exit $?
fi

private=(10.99.0.10 172.16.5.10 192.168.77.10 100.64.1.10 169.254.169.254)
cases=(reach 198.51.100.10 8080 public -- reach 203.0.113.10 8080 public --
	udp 198.51.100.10 9999 public -- dns public.test 198.51.100.10 --
	dns-raw 169.254.1.3 other.test 198.51.100.10 -- refused 169.254.1.3 80 --
	refused 169.254.1.2 8080 -- refused 198.51.100.1 8082 -- refused 10.99.0.1 8082 --
	refused 127.0.0.1 8081 -- refused 224.0.0.1 80 --
	refused 240.0.0.1 80 -- refused 0.0.0.1 80 -- refused 198.18.0.1 80 --
	udp 10.99.0.10 9999 "error EACCES" -- pktinfo 10.99.0.10 9999 -- bound 10.99.0.10 8080)
for a in "${private[@]}"; do cases+=(-- refused "$a" 8080); done
run_cases "pasta" --network -- "${cases[@]}"

# IPv6: the host offers it, so the sandbox gets it, with the same firewall
cases6=(reach 2001:db8:1::10 8080 public -- reach 2001:db8:2::10 8080 public --
	refused fd00:99::10 8080 -- refused fd00:99::1 8082 -- refused fe80::1%eth0 8082 --
	refused 2001:db8:1::1 8082 -- refused ::1 8081 -- refused ::ffff:10.99.0.10 8080 --
	refused ::ffff:127.0.0.1 8081 -- refused 64:ff9b::a63:a 8080 -- refused 2002:a63:a::1 8080 --
	refused fd00:7473:6278::1 8080 -- refused ff02::1 8080 --
	bound fd00:99::10 8080 -- bound 2001:db8:1::1 8082 -- bound fe80::1%eth0 8082)
run_cases "pasta IPv6" --network -- "${cases6[@]}"

# rules: an allow punches through the private blocks, a deny blocks a public host; the
# metadata address and the host's own stay blocked whatever is allowed
pol=$(mktemp /tmp/ts-net-pol-XXXXXX.yaml)
printf 'network:\n  allow: [10.99.0.0/24, 169.254.0.0/16]\n  deny: [203.0.113.10]\n' >"$pol"
chmod 644 "$pol"
run_cases "rules" --policy "$pol" -- reach 10.99.0.10 8080 private -- refused 203.0.113.10 8080 -- \
	reach 198.51.100.10 8080 public -- refused 169.254.169.254 8080 -- refused 10.99.0.1 8082 -- \
	refused 172.16.5.10 8080
printf 'network:\n  allow: [fd00:99::/64]\n  deny: [2001:db8:2::10]\n' >"$pol"
run_cases "IPv6 rules" --policy "$pol" -- reach fd00:99::10 8080 private -- \
	refused 2001:db8:2::10 8080 -- reach 2001:db8:1::10 8080 public -- refused fd00:99::1 8082 -- \
	refused 2001:db8:1::1 8082 -- refused fe80::1%eth0 8082
printf 'network:\n  allow: [api.github.com, 10.99.0.0/24]\n' >"$pol"
out=$("$cli" run --policy "$pol" -- true 2>&1)
rc=$?
[ $rc != 0 ] && [[ $out == *"both host names"* ]]
tap_result $? "host names and addresses in network.allow together are refused ($rc: ${out:0:120})"
rm -f "$pol"

# the default is unchanged: only lo
run_cases "default" -- refused 198.51.100.10 8080

# nothing inside can change the firewall: not root, not the sandbox's user
as=(--user root)
[ "$TS_MODE" = userns ] && as=() # one id: no root inside
out=$(timeout 60 "$cli" run --network "${as[@]}" -- sh -c '
	before=$(ip route; ip addr)
	ip route add 10.99.0.0/24 via 169.254.1.2 dev eth0 onlink 2>/dev/null && echo CHANGED route
	ip route del prohibit 10.0.0.0/8 2>/dev/null && echo CHANGED delroute
	ip addr add 10.99.0.50/24 dev eth0 2>/dev/null && echo CHANGED addr
	ip -6 route add fd00:99::/64 via fe80::1 dev eth0 2>/dev/null && echo CHANGED route6
	ip -6 route del prohibit 8000::/1 2>/dev/null && echo CHANGED delroute6
	ip -6 addr add fd00:99::50/64 dev eth0 2>/dev/null && echo CHANGED addr6
	nft add table inet evil 2>/dev/null && echo CHANGED nft
	nft flush ruleset 2>/dev/null && echo CHANGED flush
	iptables -I OUTPUT -j ACCEPT 2>/dev/null && echo CHANGED iptables
	[ "$before" = "$(ip route; ip addr)" ] && echo SAME
	id -u' 2>&1)
[[ $out == *SAME* ]] && [[ $out != *CHANGED* ]]
tap_result $? "${as[*]:-user}: ip route/addr, nft and iptables change nothing (${out//$'\n'/ })"
run_cases "after the attempts" --network "${as[@]}" -- refused 10.99.0.10 8080 -- refused fd00:99::10 8080

# slirp4netns, the fallback
if command -v slirp4netns >/dev/null; then
	TOREN_SANDBOX_NETWORK_BACKEND=slirp4netns run_cases "slirp4netns" --network -- \
		reach 198.51.100.10 8080 public -- refused 10.99.0.10 8080 -- refused 127.0.0.1 8081 -- \
		refused 169.254.1.2 8080 -- bound 10.99.0.10 8080 -- dns public.test 198.51.100.10
	# its IPv6 (--enable-ipv6): fd00::2 is its host (the host's ::1 without
	# --disable-host-loopback), fd00::3 its DNS, fe80::2 its router: all blocked
	TOREN_SANDBOX_NETWORK_BACKEND=slirp4netns run_cases "slirp4netns IPv6" --network -- \
		reach 2001:db8:1::10 8080 public -- reach 2001:db8:2::10 8080 public -- \
		refused fd00::2 8081 -- refused fd00::2 8082 -- refused fd00::3 53 -- \
		refused fd00::1 8081 -- refused fe80::2%eth0 8081 -- refused fd00:99::10 8080 -- \
		refused 2001:db8:1::1 8082 -- refused ::ffff:127.0.0.1 8081 -- \
		refused 64:ff9b::a63:a 8080 -- refused ff02::1 8080 -- bound fd00:99::10 8080
	out=$(TOREN_SANDBOX_NETWORK_BACKEND=slirp4netns timeout 60 "$cli" run --network -- \
		sh -c 'sleep 1; ip -6 route show table all | grep -v "table local"' 2>&1)
	[[ $out == *"default via fe80::2 dev eth0"* ]] && [[ $out == *"prohibit fd00::/64 "*"metric 1 "* ]] &&
		[[ $out == *"prohibit 8000::/1 "* ]]
	tap_result $? "slirp4netns IPv6: a default route through fe80::2, its fd00::/64 prohibited ahead of what its router advertisements add (${out//$'\n'/ | })"
	out=$(TOREN_SANDBOX_NETWORK_BACKEND=slirp4netns "$cli" doctor 2>&1 | grep "IPv6 egress")
	[[ $out == *"IPv6 through slirp4netns"* ]]
	tap_result $? "doctor says slirp4netns carries IPv6 ($out)"
else
	tap_skip "slirp4netns" "not installed"
	tap_skip "slirp4netns IPv6" "not installed"
fi

sleep 0.5
left=$(egress_procs)
tap_is "$left" "" "no egress process outlives a one-shot sandbox"

# durable: egress at every start, gone with the sandbox
id=$(timeout 60 "$cli" create --network 2>&1 | tail -1)
if [ -n "$id" ] && "$cli" exec "$id" -- true >/dev/null 2>&1; then
	out=$("$cli" exec "$id" -- python3 -c "$code" probe reach 198.51.100.10 8080 public -- refused 10.99.0.10 8080 2>&1)
	[[ $out == *"CASE PASS reach"* ]] && [[ $out != *FAIL* ]]
	tap_result $? "durable: egress and firewall (${out//$'\n'/ })"
	n=$(egress_procs | wc -l)
	tap_is "$n" 1 "durable: one egress process while it runs"
	net=$("$cli" inspect "$id" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; n=d["network"]; print(n["mode"], n.get("tx_bytes",0)>0, n.get("rx_bytes",0)>0)' 2>&1)
	tap_is "$net" "egress True True" "inspect shows the network mode and its byte counters"
	# connection accounting: 3 IPv4 and 2 IPv6 connections made, 2 refused ones not counted
	conns() { "$cli" inspect "$id" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; n=d["network"]; print(n.get("connections_ipv4"), n.get("connections_ipv6"), n.get("connections"), n.get("ipv6"))' 2>&1; }
	before=$(conns)
	out=$("$cli" exec "$id" -- python3 -c "$code" probe reach 198.51.100.10 8080 public -- \
		reach 203.0.113.10 8080 public -- reach 198.51.100.10 8080 public -- \
		reach 2001:db8:1::10 8080 public -- reach 2001:db8:2::10 8080 public -- \
		refused 10.99.0.10 8080 -- refused fd00:99::10 8080 2>&1)
	after=$(conns)
	read -r b4 b6 ball bip6 <<<"$before"
	read -r a4 a6 aall aip6 <<<"$after"
	[[ $out != *FAIL* ]] && [[ $b4 =~ ^[0-9]+$ ]] && [[ $a4 =~ ^[0-9]+$ ]] &&
		[ $((a4 - b4)) = 3 ] && [ $((a6 - b6)) = 2 ] && [ $((aall - ball)) = 5 ]
	tap_result $? "inspect counts the connections made: +3 IPv4, +2 IPv6 (before: $before; after: $after; ${out//$'\n'/ })"
	tap_is "$aip6" True "inspect says the sandbox has IPv6"
	# the helper counts only the process the pid and start time name (a pidfd against reuse)
	read -r ipid istart <<<"$("$cli" inspect "$id" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["init"]["pid"], d["init"]["start_time"])' 2>&1)"
	out=$("$TS_HELPER" --net-counters "$ipid" "$istart" 2>&1)
	[[ $out == *"connections_ipv4 $a4"* ]]
	tap_result $? "helper --net-counters PID START reads the init's counters (${out//$'\n'/ })"
	out=$("$TS_HELPER" --net-counters "$ipid" "$((istart + 1))" 2>&1)
	rc=$?
	[ $rc = 125 ] && [[ $out == *"is not the sandbox's init any more"* ]] && [[ $out != *connections_* ]]
	tap_result $? "the same pid with another start time (a reused pid) is refused, nothing counted ($rc: $out)"
	sleep 30 & other=$!
	ostart=$(awk '{sub(/.*\) /, ""); print $20}' /proc/$other/stat)
	out=$("$TS_HELPER" --net-counters "$other" "$istart" 2>&1)
	rc=$?
	kill $other 2>/dev/null; wait $other 2>/dev/null
	[ $rc = 125 ] && [[ $out == *"started at $ostart"* ]] && [[ $out != *connections_* ]]
	tap_result $? "another process's pid with the init's start time is refused ($rc: $out)"
	"$cli" stop "$id" >/dev/null 2>&1
	for _ in $(seq 50); do [ -z "$(egress_procs)" ] && break; sleep 0.1; done
	tap_is "$(egress_procs)" "" "durable: stop ends the egress process"
	out=$("$cli" exec "$id" -- python3 -c "$code" probe reach 198.51.100.10 8080 public 2>&1)
	[[ $out == *"CASE PASS"* ]]
	tap_result $? "durable: a start after stop has egress again (${out//$'\n'/ })"
	"$cli" rm -f "$id" >/dev/null 2>&1
	for _ in $(seq 50); do [ -z "$(egress_procs)" ] && break; sleep 0.1; done
	tap_is "$(egress_procs)" "" "durable: rm -f ends the egress process"
else
	tap_not_ok "durable: create --network ($id)"
	[ -n "$id" ] && "$cli" rm -f "$id" >/dev/null 2>&1
fi
tap_done
