#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent configuration through the runner (issue 10): the env allow-list (a canary that
# is named reaches the sandbox, one that is not and the runtime's own credentials never
# do), approvals through --approve-cmd (allow, deny with its reason, a failing hook, no
# approver at all) recorded in the run's log, writes gated only when asked, a pinned
# tool-set version, `sandbox: false` refused, and protected paths: read by every tool,
# written by none, and by `bash` only where the kernel rule allows (existing matches are
# read-only; a match made after the sandbox started is protected from its next start).
# TAP; runs under modes.sh.
set -u
cli=$TS_CLI
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/ts-agent-XXXXXX)
chmod 755 "$tmp"
sbs=()
cleanup() {
	for s in "${sbs[@]}"; do timeout 60 "$cli" rm -f "$s" >/dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT
# out(d): what a bash call's command printed (its text without the `[exit code N]` line)
j() { python3 -c 'import json,re,sys; d=json.load(sys.stdin); out=lambda d: re.sub(r"\n?\[exit code -?[0-9]+\]\s*$", "", d["text"]); v=eval(sys.argv[1]); print(json.dumps(v) if isinstance(v,(dict,list,tuple,bool)) or v is None else v)' "$1"; }

cat >"$tmp/env.yaml" <<'YAML'
name: env-test
sandbox:
  approval: never
  env: [TS_CANARY_NAMED]
YAML
export TOREN_SANDBOX=local
export TS_CANARY_NAMED=named-canary-41 TS_CANARY_UNNAMED=unnamed-canary-42
export E2B_API_KEY=e2b_canary_43 TOREN_SANDBOX_TOKEN=token-canary-44
run=$(timeout 120 "$cli" runs new --agent "$tmp/env.yaml" 2>"$tmp/err")
tap_result $? "a run of an agent with an env allow-list ($(head -c 200 "$tmp/err"))"
sb=$("$cli" runs show "$run" | j 'd["sandbox"]')
[ -n "$sb" ] && sbs+=("$sb")
out=$(timeout 120 "$cli" tool --agent "$tmp/env.yaml" --run "$run" - bash '{"command": "env"}' | j 'out(d)')
case $out in *named-canary-41*) tap_ok "a named host variable reaches the sandbox" ;;
*) tap_not_ok "a named host variable reaches the sandbox (env: ${out:0:300})" ;; esac
case $out in *canary-42* | *canary-43* | *canary-44*) tap_not_ok "nothing unnamed reaches it (env: ${out:0:400})" ;;
*) tap_ok "an unnamed variable and the runtime's credentials do not reach it" ;; esac
unset E2B_API_KEY TOREN_SANDBOX_TOKEN
cat >"$tmp/cred.yaml" <<'YAML'
sandbox:
  env: [E2B_API_KEY]
YAML
out=$(timeout 60 "$cli" tool --agent "$tmp/cred.yaml" "$sb" bash '{"command": "true"}' 2>&1)
[ $? = 2 ] && echo "$out" | grep -q E2B_API_KEY
tap_result $? "an agent may not name the runtime's own credentials (${out:0:200})"

out=$(timeout 60 "$cli" tool --run "$run" - bash '{"command": "echo as-begun"}' </dev/null)
tap_is "$(echo "$out" | j 'out(d).strip()')" as-begun "a run resumed without --agent goes on with its recorded configuration (approval: never)"

# approvals: a run of the default agent, which gates bash (a run resumed without --agent
# goes on with the configuration it was begun with)
arun=$(timeout 120 "$cli" runs new --sandbox "$sb")
out=$(timeout 60 "$cli" tool --approve-cmd 'read -r a; case $a in *allowed*) exit 0;; esac; echo "not that one"; exit 1' --run "$arun" - bash '{"command": "echo allowed"}')
tap_is "$(echo "$out" | j '(d["is_error"], out(d).strip())')" '[false, "allowed"]' "approval: the hook approves (it read the arguments on stdin)"
out=$(timeout 60 "$cli" tool --approve-cmd 'echo "not that one"; exit 1' --run "$arun" - bash '{"command": "echo denied"}')
st=$?
tap_is "$st/$(echo "$out" | j 'd["data"]["error"]')" "1/denied" "approval: the hook denies: a tool error"
echo "$out" | j 'out(d)' | grep -q 'not that one'
tap_result $? "the denial carries the hook's reason"
out=$(timeout 60 "$cli" tool --approve-cmd 'exit 7' "$sb" bash '{"command": "echo x"}' 2>&1)
[ $? = 2 ] && echo "$out" | grep -q 'exit 0 to approve'
tap_result $? "a hook that fails (exit 7) fails the call, never approves it (${out:0:200})"
out=$(timeout 60 "$cli" tool "$sb" bash '{"command": "echo x"}' </dev/null)
[ $? = 1 ] && echo "$out" | j 'out(d)' | grep -q 'approval: never'
tap_result $? "no approver and no terminal: the call fails, naming approval: never"
tap_is "$(timeout 60 "$cli" tool "$sb" write_file '{"path": "free.txt", "content": "x"}' </dev/null | j 'd["is_error"]')" false \
	"writes are not gated by default"
"$cli" runs export "$arun" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
ap = [e["data"] for e in ev if e["type"] == "event" and e["event"] == "approval"]
sys.exit(0 if [a["allowed"] for a in ap] == [True, False] and ap[1]["reason"] == "not that one" else 1)'
tap_result $? "both decisions are in the run's event log, with the reason"
cat >"$tmp/wgate.yaml" <<'YAML'
sandbox:
  approval: { bash: never, write: always }
YAML
out=$(timeout 60 "$cli" tool --agent "$tmp/wgate.yaml" --approve-cmd 'exit 1' "$sb" write_file '{"path": "gated.txt", "content": "x"}')
tap_is "$(echo "$out" | j 'd["data"]["error"]')" denied "approval: {write: always} gates write_file"
tap_is "$(timeout 60 "$cli" tool --agent "$tmp/wgate.yaml" --approve-cmd 'exit 1' "$sb" read_file '{"path": "free.txt"}' | j 'd["is_error"]')" false \
	"... but never a read"

cat >"$tmp/v1.yaml" <<'YAML'
sandbox: { approval: never, tools: 1 }
YAML
out=$(timeout 60 "$cli" tool --agent "$tmp/v1.yaml" "$sb" grep '{"pattern": "x"}')
echo "$out" | j 'out(d)' | grep -q 'version 2'
tap_result $? "an agent pinned to tools: 1 has no grep, and is told why"
cat >"$tmp/nosb.yaml" <<'YAML'
sandbox: false
YAML
out=$(timeout 60 "$cli" tool --agent "$tmp/nosb.yaml" "$sb" bash '{"command": "true"}' 2>&1)
[ $? = 2 ] && echo "$out" | grep -q 'sandbox: false'
tap_result $? "sandbox: false is refused (${out:0:200})"

# protected paths: an existing .env is read-only to bash (the kernel) and to every tool
pid=$(timeout 60 "$cli" create | tail -n 1)
[ -n "$pid" ] && sbs+=("$pid")
timeout 60 "$cli" exec "$pid" -- sh -c 'mkdir -p /home/user/deep/er && echo SECRET=1 > /home/user/deep/er/.env'
timeout 60 "$cli" restart "$pid" >/dev/null
ptool() { timeout 60 "$cli" tool --approve-cmd true "$pid" "$@"; }
tap_is "$(ptool read_file '{"path": "deep/er/.env"}' | j '"SECRET=1" in d["text"]')" true "a protected file can be read"
tap_is "$(ptool write_file '{"path": "deep/er/.env", "content": "x"}' | j 'd["data"]["error"]')" protected "write_file refuses it at any depth"
tap_is "$(ptool edit_file '{"path": "deep/er/.env", "old_string": "SECRET=1", "new_string": "x"}' | j 'd["data"]["error"]')" protected "edit_file refuses it"
tap_is "$(ptool write_file '{"path": "new/id_rsa", "content": "k"}' | j 'd["data"]["error"]')" protected "write_file refuses a new file that matches"
out=$(ptool bash '{"command": "echo hacked > deep/er/.env; echo st=$?; cat deep/er/.env"}' | j 'out(d)')
case $out in *st=0*) tap_not_ok "bash cannot write an existing protected file ($out)" ;;
*SECRET=1*) tap_ok "bash cannot write an existing protected file (the kernel refuses)" ;;
*) tap_not_ok "bash cannot write an existing protected file ($out)" ;; esac
out=$(ptool bash '{"command": "rm -f deep/er/.env; mv /dev/null deep/er/.env 2>&1; test -s deep/er/.env && echo still-there"}' | j 'out(d)')
case $out in *still-there*) tap_ok "bash cannot delete or replace it either" ;;
*) tap_not_ok "bash cannot delete or replace it either ($out)" ;; esac
# the documented rule for a match made after the start: writable until the next start
out=$(ptool bash '{"command": "echo A > later.pem && echo B >> later.pem && cat later.pem"}' | j 'out(d)')
tap_is "$(echo "$out" | tr '\n' ' ')" "A B " "a match bash makes after the start is writable until the next start (documented)"
timeout 60 "$cli" restart "$pid" >/dev/null
out=$(ptool bash '{"command": "echo C >> later.pem; cat later.pem"}' | j 'out(d)')
case $out in *C*) tap_not_ok "after a restart it is protected like any other ($out)" ;;
*) tap_ok "after a restart it is protected like any other" ;; esac

# the agent's own protected patterns: the tools and the kernel, as the policy's
cat >"$tmp/prot.yaml" <<'YAML'
sandbox: { approval: never, protected: ["*.secret"] }
YAML
prun=$(timeout 120 "$cli" runs new --agent "$tmp/prot.yaml")
psb=$("$cli" runs show "$prun" | j 'd["sandbox"]')
[ -n "$psb" ] && sbs+=("$psb")
timeout 60 "$cli" exec "$psb" -- sh -c 'echo keep > /home/user/db.secret'
timeout 60 "$cli" restart "$psb" >/dev/null
atool() { timeout 60 "$cli" tool --agent "$tmp/prot.yaml" --run "$prun" - "$@"; }
tap_is "$(atool write_file '{"path": "db.secret", "content": "x"}' | j 'd["data"]["error"]')" protected "an agent's own pattern: write_file refuses it"
out=$(atool bash '{"command": "echo x > db.secret; cat db.secret"}' | j 'out(d)')
case $out in *keep*) tap_ok "an agent's own pattern: the kernel keeps bash from writing it" ;;
*) tap_not_ok "an agent's own pattern: the kernel keeps bash from writing it ($out)" ;; esac
tap_done
