#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Durable runs through `toren-sandbox tool --run` (issue 10, "The event log"): completed
# calls replay without executing (a side-effect counter proves it), a call interrupted by
# kill -9 of the runner (in bash, and in write_file) executes again and says so, no record
# is lost or duplicated, a divergence names the call, a finished run refuses calls and
# `reap` stops its sandbox, a removed sandbox is rebuilt around the run's workspace.
# TAP; runs under modes.sh.
set -u
cli=$TS_CLI
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d /tmp/ts-runs-XXXXXX)
chmod 755 "$tmp"
sbs=()
cleanup() {
	for s in "${sbs[@]}"; do timeout 60 "$cli" rm -f "$s" >/dev/null 2>&1; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# j EXPR < JSON: a Python expression over the document d
# out(d): what a bash call's command printed (its text without the `[exit code N]` line)
j() { python3 -c 'import json,re,sys; d=json.load(sys.stdin); out=lambda d: re.sub(r"\n?\[exit code -?[0-9]+\]\s*$", "", d["text"]); v=eval(sys.argv[1]); print(json.dumps(v) if isinstance(v,(dict,list,tuple,bool)) or v is None else v)' "$1"; }

cat >"$tmp/agent.yaml" <<'YAML'
name: resume-test
sandbox:
  approval: never
YAML
cat >"$tmp/gated.yaml" <<'YAML'
name: gated-writes
sandbox:
  approval: { bash: never, write: always }
YAML

run=$(timeout 120 "$cli" runs new --agent "$tmp/agent.yaml" 2>"$tmp/err")
tap_result $? "runs new begins a run ($run $(head -c 300 "$tmp/err"))"
sb=$("$cli" runs show "$run" | j 'd["sandbox"]')
[ -n "$sb" ] && sbs+=("$sb")
tool() { timeout 120 "$cli" tool --agent "$tmp/agent.yaml" --run "$run" "$@"; }
in_sb() { timeout 60 "$cli" exec "$sb" -- sh -c "cd /home/user && $1"; }

c0='{"command": "echo x >> count; wc -l < count"}'
out=$(tool --call c0 - bash "$c0")
tap_is "$(echo "$out" | j 'd["text"].strip().splitlines()[0]')" 1 "call c0 executes (its counter is 1)"
tap_is "$(echo "$out" | j 'd["call"]["replayed"]')" false "c0 was not replayed the first time"
out=$(tool --call c0 - bash "$c0")
tap_is "$(echo "$out" | j 'd["call"]["replayed"]')" true "c0 again: replayed"
tap_is "$(echo "$out" | j 'd["text"].strip().splitlines()[0]')" 1 "the replay returns the recorded result"
tap_is "$(in_sb 'wc -l < count')" 1 "the replay did not execute (the counter is still 1)"

# kill -9 of the runner in the middle of a bash call: the first execution waits, a second
# returns at once, so the re-execution is visible in the counter and in its speed
c1='{"command": "echo y >> count2; [ $(wc -l < count2) -ge 2 ] || sleep 120; echo done"}'
tool --call c1 - bash "$c1" >"$tmp/c1.out" 2>&1 &
tpid=$!
for _ in $(seq 200); do in_sb 'test -s count2' && break; sleep 0.1; done
kill -9 "$tpid"
wait "$tpid" 2>/dev/null
state=$("$cli" runs show "$run" | j '[(c["key"], c["completed"], c["attempts"]) for c in d["call_records"] if c["key"]=="k:c1"]')
tap_is "$state" '[["k:c1", false, 1]]' "kill -9 mid-bash: c1 is recorded started, not completed"
out=$(tool --call c0 - bash "$c0")
tap_is "$(echo "$out" | j 'd["call"]["replayed"]')" true "resume: c0 replays"
out=$(tool --call c1 - bash "$c1")
tap_is "$(echo "$out" | j '(d["call"]["replayed"], d["call"]["attempt"], d["data"].get("reexecuted_attempt"))')" \
	'[false, 2, 2]' "resume: the interrupted c1 executes again, attempt 2, and says so"
tap_is "$(in_sb 'wc -l < count2')" 2 "c1 ran twice in all (at-least-once), c0 once"
tap_is "$(in_sb 'wc -l < count')" 1 "the counter of c0 is still 1"

out=$(tool --call c0 - bash '{"command": "echo something else"}' 2>&1)
st=$?
[ $st = 2 ] && echo "$out" | grep -q 'c0' && echo "$out" | grep -qi 'recorded'
tap_result $? "divergence: other arguments under c0 fail, naming the recorded call ($st: ${out:0:300})"

a=$(tool - bash '{"command": "echo a"}' | j 'd["call"]["index"]')
b=$(tool - bash '{"command": "echo a"}' | j 'd["call"]["index"]')
[ -n "$a" ] && [ "$b" = $((a + 1)) ]
tap_result $? "calls without --call are appended (indexes $a, $b)"

# write_file interrupted: the approval hook kills the runner while it is asked (the call
# is started, nothing is written), then the resume writes it once
gtool() { timeout 120 "$cli" tool --agent "$tmp/gated.yaml" --run "$run" "$@"; }
w0='{"path": "notes/w0.txt", "content": "written once\n"}'
gtool --approve-cmd 'kill -9 $PPID; sleep 5' --call w0 - write_file "$w0" >/dev/null 2>&1
state=$("$cli" runs show "$run" | j '[(c["completed"], c["attempts"]) for c in d["call_records"] if c["key"]=="k:w0"]')
tap_is "$state" '[[false, 1]]' "kill -9 mid-write_file: w0 is recorded started, not completed"
in_sb 'test ! -e notes/w0.txt'
tap_result $? "the interrupted write_file wrote nothing"
out=$(gtool --approve-cmd true --call w0 - write_file "$w0")
tap_is "$(echo "$out" | j '(d["is_error"], d["call"]["attempt"])')" '[false, 2]' "resume: w0 executes again (attempt 2)"
tap_is "$(in_sb 'cat notes/w0.txt')" "written once" "the file has its content"
# killed after approval, while it writes: whatever the moment, never a partial file
big=$(python3 -c 'import json; print(json.dumps({"path": "big.txt", "content": "z" * (4 << 20)}))')
echo "$big" >"$tmp/big.json"
gtool --approve-cmd '(sleep 0.02; kill -9 $PPID) >/dev/null 2>&1 & exit 0' --call w1 - write_file - <"$tmp/big.json" >/dev/null 2>&1
size=$(in_sb 'if [ -e big.txt ]; then stat -c %s big.txt; else echo none; fi')
case $size in none | 4194304) tap_ok "killed while writing: the file is absent or whole ($size)" ;;
*) tap_not_ok "killed while writing: the file is absent or whole (size $size)" ;; esac
out=$(gtool --approve-cmd true --call w1 - write_file - <"$tmp/big.json")
tap_is "$(echo "$out" | j 'd["is_error"]')" false "resume: w1 completes"
tap_is "$(in_sb 'stat -c %s big.txt')" 4194304 "the file is whole after the resume"

# the log: every key once, every call completed, nothing lost
keys=$("$cli" runs export "$run" | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin]
calls = [r for r in recs if r["type"] == "call"]
keys = [c["key"] for c in calls]
print(recs[0]["type"], len(keys) == len(set(keys)), all(c["completed"] for c in calls),
      [c["index"] for c in calls] == list(range(len(calls))), sorted(k for k in keys if k.startswith("k:")))')
tap_is "$keys" "run True True True ['k:c0', 'k:c1', 'k:w0', 'k:w1']" "export: the run, then each call once, all completed, indexes in order"

# a removed sandbox is rebuilt around the run's workspace
timeout 60 "$cli" rm -f "$sb" >/dev/null 2>&1
out=$(tool - bash '{"command": "cat notes/w0.txt"}')
tap_is "$(echo "$out" | j 'out(d).strip()')" "written once" "sandbox removed: the next call rebuilds it around the run's workspace"
sb2=$("$cli" runs show "$run" | j 'd["sandbox"]')
[ -n "$sb2" ] && sbs+=("$sb2")
[ -n "$sb2" ] && [ "$sb2" != "$sb" ]
tap_result $? "the run records its new sandbox ($sb -> $sb2)"
"$cli" runs export "$run" | grep -q '"rebuilt"'
tap_result $? "the event log says the sandbox was rebuilt"

# finished: calls refused, `reap` stops its sandbox, the workspace stays
"$cli" runs finish "$run"
tap_result $? "runs finish"
out=$(tool - bash '{"command": "true"}' 2>&1)
[ $? = 2 ] && echo "$out" | grep -q finished
tap_result $? "a finished run refuses calls (${out:0:200})"
timeout 120 "$cli" reap --json >"$tmp/reap.json" 2>&1
grep -q "\"$sb2\"" "$tmp/reap.json" && grep -q run-finished "$tmp/reap.json"
tap_result $? "reap stops the finished run's sandbox ($(head -c 300 "$tmp/reap.json"))"
st=$("$cli" inspect "$sb2" 2>/dev/null | j 'd.get("state")')
tap_is "$st" stopped "its sandbox is stopped, not removed"
# an orphan: a sandbox the runner made (label toren.agent) in no run of the log, older than
# a day (its creation time is set back in state.db: waiting a day is not a test)
orphan=$(timeout 60 "$cli" create --label toren.agent=gone --label toren.run=r0123456789abcde | tail -n 1)
[ -n "$orphan" ] && sbs+=("$orphan")
young=$(timeout 60 "$cli" create --label toren.agent=gone --label toren.run=r0123456789abcde | tail -n 1)
[ -n "$young" ] && sbs+=("$young")
python3 - "${TOREN_SANDBOX_ROOT:-$HOME/.toren/sandboxes}/state.db" "$orphan" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("UPDATE sandboxes SET created_ms = ? WHERE id = ?", (int(time.time() * 1000) - 2 * 86400 * 1000, sys.argv[2]))
db.commit()
PY
timeout 120 "$cli" reap --json >"$tmp/reap3.json" 2>&1
grep -q "\"$orphan\"" "$tmp/reap3.json" && grep -q '"orphan"' "$tmp/reap3.json"
tap_result $? "reap stops the runner's orphan older than a day ($(head -c 300 "$tmp/reap3.json"))"
! grep -q "\"$young\"" "$tmp/reap3.json"
tap_result $? "... but not a younger one"
other=$(timeout 60 "$cli" create | tail -n 1)
[ -n "$other" ] && sbs+=("$other")
timeout 120 "$cli" reap --json >"$tmp/reap2.json" 2>&1
! grep -q "\"$other\"" "$tmp/reap2.json"
tap_result $? "reap leaves a sandbox the runner did not make"
tap_done
