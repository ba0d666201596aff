#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Name-based egress (`network: {allow: [NAME...]}`, run/create --net-allow NAME): run by
# network-proxy-env.sh inside the test's own network namespace (see there for the names
# and addresses) through modes.sh. Proves: the sandbox has `lo` only and the proxy's
# variables; an allowed name is reached through the proxy (curl through the variables,
# and a tunnel of our own), `*.suffix` matches below the suffix only, a name off the list
# and a port not allowed are refused with 403 and the reason, a name resolving to a
# private, loopback or metadata address (also one of several) is refused, an unknown
# name is a 502 (also one that exists below the host's search domain: names are
# resolved absolute), a trailing dot is the same name in a request and in an entry; a
# ClientHello naming another host (or hiding it: ECH is not made here, see the unit
# test) is cut off while the matching one and one without a name pass;
# plain-HTTP proxy requests are refused; a direct connection fails at once; root inside
# cannot add an address or a route; names and addresses do not mix; a durable sandbox's
# counters are in `inspect`; no proxy outlives its sandbox.
set -u
. "$(dirname "$0")/lib.sh"
cli=$TS_CLI
code=$(cat "$(dirname "$0")/proxy-helper.py")
env_dir=/tmp/ts-proxy-env
cd /tmp || exit 1

while read -r kind verdict rest; do
	[ "$verdict" = PASS ] && tap_ok "$kind: $rest" || tap_not_ok "$kind: $rest"
done <"$env_dir/controls" 2>/dev/null

[ -x "$(dirname "$cli")/toren-sandbox-proxy" ] || tap_skip_all "toren-sandbox-proxy was not built"
allow=(--net-allow pub.example.test --net-allow pub.example.test:80 --net-allow pub.example.test:8443
	--net-allow '*.wild.example.test'
	--net-allow priv.example.test --net-allow loop.example.test --net-allow meta.example.test
	--net-allow mixed.example.test --net-allow gone.example.test
	--net-allow short --net-allow dot.example.test.)
out=$(timeout 60 "$cli" run "${allow[@]}" -- true 2>&1)
rc=$?
[ $rc = 0 ] || tap_skip_all "a sandbox with a name proxy cannot start here ($rc): $out"

# in: one sandbox runs every client, one line per case: `CASE <name> <output>`
script='
c() { n=$1; shift; printf "CASE %s %s\n" "$n" "$(timeout 20 python3 -c "$CODE" "$@" 2>&1 | tr "\n" " ")"; }
printf "CASE links %s\n" "$(ls /sys/class/net | tr "\n" " ")"
printf "CASE routes %s|\n" "$(ip -4 route show table all 2>&1 | grep -v "table local" | tr "\n" " ")"
printf "CASE env %s\n" "$(env | grep -i _proxy= | sort | tr "\n" " ")"
printf "CASE curl-tunnel %s\n" "$(timeout 20 curl -s -m 10 -p http://pub.example.test/ 2>&1)"
printf "CASE curl-plain %s\n" "$(timeout 20 curl -s -m 10 http://pub.example.test/ 2>&1)"
c get get pub.example.test 80
c wild1 hello a.wild.example.test 80 a.wild.example.test
c wild2 hello b.c.wild.example.test 80 b.c.wild.example.test
c plain-wild get a.wild.example.test 80
c wild-suffix connect wild.example.test 443
c nope connect nope.example.test 443
c port connect pub.example.test 22
c port-named-other connect pub.example.test 8080
c address connect 198.51.100.10 443
c priv connect priv.example.test 443
c loop connect loop.example.test 80
c meta connect meta.example.test 80
c mixed connect mixed.example.test 443
c gone connect gone.example.test 443
c short connect short 443
c get-dot get pub.example.test. 80
c nope-dot connect nope.example.test. 443
c two-dots connect pub.example.test.. 443
c entry-dot hello dot.example.test 443 dot.example.test
c sni-match hello pub.example.test 443 pub.example.test
c sni-case hello pub.example.test 443 PUB.Example.TEST
c sni-other hello pub.example.test 443 evil.example.test
c sni-none hello pub.example.test 443 -
c direct direct 198.51.100.10 80
c direct-host direct 198.51.100.1 80
'
[ -e "$env_dir/tls" ] && script+='
c tls-match tls pub.example.test 8443 pub.example.test
c tls-other tls pub.example.test 8443 other.example.test
printf "CASE curl-tls %s\n" "$(timeout 20 curl -sk -m 10 https://pub.example.test:8443/ 2>&1)"
'
out=$(timeout 300 "$cli" run "${allow[@]}" -e CODE="$code" -- sh -c "$script" 2>&1)
rc=$?
[ $rc = 0 ] || { tap_not_ok "the client sandbox ran (exit $rc)"; tap_diag "$out"; }
declare -A got=()
while IFS= read -r line; do
	case $line in "CASE "*) ;; *) tap_diag "$line"; continue ;; esac
	line=${line#CASE }
	got[${line%% *}]=${line#* }
done <<<"$out"
has() { # NAME WANT-GLOB DESC
	local v=${got[$1]:-(no result)}
	# shellcheck disable=SC2053
	[[ $v == $2 ]] && tap_ok "$3 ($v)" || tap_not_ok "$3 (got: $v)"
}
has links 'lo ' "the sandbox's network namespace has lo only"
has routes '|' "no IPv4 route but the local table's"
has env '*HTTPS_PROXY=http://127.0.0.1:3128*HTTP_PROXY=http://127.0.0.1:3128*NO_PROXY=localhost,127.0.0.1*https_proxy=http://127.0.0.1:3128*' "the proxy variables are set"
has curl-tunnel 'public' "an allowed name:80 through the proxy variables (curl -p, CONNECT :80, plain HTTP: the entry names the port)"
has curl-plain '*plain-HTTP proxy requests are not supported*' "a plain-HTTP proxy request is refused with its reason"
has get 'public ' "an allowed name through a tunnel of our own"
has wild1 'REPLY *' "*.wild.example.test allows a.wild.example.test (its ClientHello reaches the server)"
has wild2 'REPLY *' "*.wild.example.test allows b.c.wild.example.test"
case ${got[plain-wild]:-} in
*public*) tap_not_ok "plain HTTP to a name's default ports is cut off (got: ${got[plain-wild]})" ;;
*) tap_ok "plain HTTP to a name's default ports is cut off: its Host could name another site (${got[plain-wild]:-})" ;;
esac
has wild-suffix "*403*not on the sandbox's allow-list*" "*.wild.example.test does not allow wild.example.test"
has nope "*403*nope.example.test\` is not on the sandbox's allow-list*" "a name off the list: 403 and why"
has port '*403*port 22 of `pub.example.test` is not allowed*' "port 22 of an allowed name: 403"
has port-named-other '*403*port 8080*' "a port no entry names: 403"
has address '*400*not a host name*' "an address instead of a name is refused"
has priv '*403*resolves to a private or reserved address (10.99.0.10)*' "a name resolving to 10.x is refused"
has loop '*403*resolves to a private or reserved address (127.0.0.1)*' "a name resolving to 127.0.0.1 is refused"
has meta '*403*(169.254.169.254)*' "a name resolving to the metadata address is refused"
has mixed '*403*resolves to a private or reserved address*' "a name with a public and a private address is refused"
has gone '*502*cannot resolve `gone.example.test`*' "an allowed name that does not resolve: 502, not found below the host's search domain (gone.example.test.corp.test)"
has short '*502*cannot resolve `short`*' "an allowed one-label name is resolved as is (short.), never as short.corp.test"
has get-dot 'public ' "CONNECT to an allowed name with a trailing dot: the same entry"
has nope-dot "*403*nope.example.test\` is not on the sandbox's allow-list*" "a trailing dot does not get a name past the list"
has two-dots '*400*' "two trailing dots: not a name"
has entry-dot "REPLY *" "an allow entry with a trailing dot (dot.example.test.) allows the name without"
has sni-match 'REPLY public got * bytes ' "a ClientHello naming the CONNECT host reaches the server"
has sni-case 'REPLY public got * bytes ' "the server name is compared without case"
has sni-other 'CLOSED ' "a ClientHello naming another host is cut off, nothing forwarded"
has sni-none 'REPLY public got * bytes ' "a ClientHello without a server name passes (the address is the allowed name's)"
has direct 'ENETUNREACH *' "a direct connection to the public server fails at once"
has direct-host 'ENETUNREACH *' "a direct connection to the test host fails at once"
if [ -e "$env_dir/tls" ]; then
	has tls-match 'public-tls ' "a real TLS session through the proxy"
	has tls-other 'CLOSED *' "a real TLS session naming another host is cut off"
	has curl-tls 'public-tls' "curl https:// through the proxy variables"
else
	for n in tls-match tls-other curl-tls; do tap_skip "$n" "openssl cannot make a certificate here"; done
fi
case ${got[direct]:-} in
ENETUNREACH\ 0.0s* | ENETUNREACH\ 0.1s*) tap_ok "the direct connection failed within 0.1 s (${got[direct]})" ;;
*) tap_not_ok "the direct connection failed within 0.1 s (${got[direct]:-none})" ;;
esac

# root inside cannot make itself another way out
as=(--user root)
[ "$TS_MODE" = userns ] && as=() # one id: no root inside
out=$(timeout 60 "$cli" run --net-allow pub.example.test "${as[@]}" -e CODE="$code" -- sh -c '
	before=$(ip addr; ip route)
	ip link add evil0 type dummy 2>/dev/null && echo CHANGED link
	ip addr add 198.51.100.77/24 dev lo 2>/dev/null && echo CHANGED addr
	ip route add default dev lo 2>/dev/null && echo CHANGED route
	ip route add 198.51.100.0/24 dev lo 2>/dev/null && echo CHANGED route2
	[ "$before" = "$(ip addr; ip route)" ] && echo SAME
	python3 -c "$CODE" direct 198.51.100.10 80
	id -u' 2>&1)
[[ $out == *SAME* ]] && [[ $out != *CHANGED* ]] && [[ $out == *ENETUNREACH* ]]
tap_result $? "${as[*]:-user}: ip link/addr/route change nothing, still no way out (${out//$'\n'/ })"
if [ "$TS_MODE" = userns ]; then
	tap_skip "root inside" "one id under unshare -r: no root inside (checked as the user)"
else
	[[ $out == *$'\n'0 ]] || [[ $out == *" 0" ]] || [[ $out == *0 ]]
	tap_result $? "that was root inside (id -u: ${out##*$'\n'})"
fi

# names and addresses do not mix
out=$(timeout 30 "$cli" run --net-allow pub.example.test --net-allow 192.0.2.0/24 -- true 2>&1)
rc=$?
[ $rc = 125 ] && [[ $out == *"both host names"* ]]
tap_result $? "names and address prefixes together are refused ($rc: ${out:0:160})"
out=$(timeout 30 "$cli" run --net-allow 'a.*.example.test' -- true 2>&1)
rc=$?
[ $rc = 2 ] && [[ $out == *"first label"* ]]
tap_result $? "a bad pattern is a usage error ($rc: ${out:0:160})"
pol=$(mktemp /tmp/ts-proxy-pol-XXXXXX.yaml)
printf 'network:\n  allow: [pub.example.test, "*.wild.example.test:80"]\n' >"$pol"
out=$(timeout 60 "$cli" run --policy "$pol" -e CODE="$code" -- sh -c 'python3 -c "$CODE" get a.wild.example.test 80; python3 -c "$CODE" connect nope.example.test 443' 2>&1)
[[ $out == public*403* ]]
tap_result $? "the same through a policy file (${out//$'\n'/ })"
rm -f "$pol"

# a durable sandbox: its counters in inspect, its proxy gone with it
id=$(timeout 60 "$cli" create --net-allow pub.example.test:80 --net-allow priv.example.test 2>&1)
if [[ $id =~ ^[0-9a-f]{12}$ ]]; then
	timeout 60 "$cli" exec "$id" -- sh -c "python3 -c \"\$1\" get pub.example.test 80; python3 -c \"\$1\" connect nope.example.test 443; python3 -c \"\$1\" connect priv.example.test 443" sh "$code" >/dev/null 2>&1
	sleep 2
	j=$("$cli" inspect "$id" 2>&1)
	echo "$j" | python3 -c '
import json, sys
n = json.load(sys.stdin)
n = n[0] if isinstance(n, list) else n
n = n["network"]
p = n["proxy"]
ok = n["mode"] == "proxy" and p["allowed"] >= 1 and p["refused"]["name"] >= 1 and p["refused"]["private"] >= 1 and p["bytes_in"] > 0 and p["connections"] >= 3
print(json.dumps(n))
sys.exit(0 if ok else 1)' >/tmp/ts-proxy-inspect.$$ 2>&1
	tap_result $? "inspect shows the proxy's counters ($(cat /tmp/ts-proxy-inspect.$$))"
	rm -f /tmp/ts-proxy-inspect.$$
	pid=$(ps -eo pid=,args= | grep 'toren-sandbox-proxy --listen-fd' | grep "$id" | grep -v grep | awk '{print $1}')
	[ -n "$pid" ]
	tap_result $? "the durable sandbox's proxy runs (pid ${pid:-none})"
	"$cli" stop "$id" >/dev/null 2>&1
	sleep 1
	left=$(ps -eo pid=,args= | grep 'toren-sandbox-proxy --listen-fd' | grep "$id" | grep -v grep)
	[ -z "$left" ]
	tap_result $? "stop ends its proxy (${left:-none left})"
	"$cli" rm -f --purge "$id" >/dev/null 2>&1
else
	tap_not_ok "create --net-allow ($id)"
fi
# serve: an E2B create body's network.allowOut with names
port=$((20000 + RANDOM % 20000))
"$cli" serve --listen 127.0.0.1:$port --envd-listen 127.0.0.1:$((port + 1)) >/tmp/ts-proxy-serve.$$ 2>&1 &
spid=$!
for _ in $(seq 50); do curl -s -o /dev/null "127.0.0.1:$port/health" && break; sleep 0.1; done
post() { curl -s -m 60 -XPOST "127.0.0.1:$port/sandboxes" -H 'X-API-Key: e2b_test' -H 'Content-Type: application/json' -d "$1"; }
j=$(post '{"templateID":"base","network":{"allowOut":["pub.example.test:80"]}}')
sid=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("sandboxID",""))' 2>/dev/null)
if [ -n "$sid" ]; then
	out=$(timeout 60 "$cli" exec "$sid" -- sh -c "ls /sys/class/net; python3 -c \"\$1\" get pub.example.test 80; python3 -c \"\$1\" connect nope.example.test 443" sh "$code" 2>&1)
	[[ $out == lo*public*403* ]]
	tap_result $? "E2B create with network.allowOut names: lo only, the name reached, others refused (${out//$'\n'/ })"
	curl -s -m 30 -XDELETE "127.0.0.1:$port/sandboxes/$sid" -H 'X-API-Key: e2b_test' >/dev/null
else
	tap_not_ok "E2B create with network.allowOut names ($j)"
fi
j=$(post '{"templateID":"base","network":{"allowOut":["pub.example.test","192.0.2.0/24"]}}')
[[ $j == *'"code":400'*"both host names and addresses"* ]]
tap_result $? "E2B allowOut with names and addresses: 400 ($j)"
kill $spid 2>/dev/null
wait $spid 2>/dev/null
rm -f /tmp/ts-proxy-serve.$$

left=$(ps -eo pid=,args= | grep 'toren-sandbox-proxy --listen-fd' | grep -- '--allow pub.example.test' | grep -v grep)
[ -z "$left" ]
tap_result $? "no proxy outlives its sandbox (${left:-none})"
tap_done
