#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Workload: CPython's own regression tests for the OS-facing modules (Debian's
# libpython3.11-testsuite), run by regrtest in the current directory. The same script
# runs outside and inside the sandbox (driver.sh); the results are compared per test id.
#
# usage: cpython.sh PREFIX [--matchfile FILE] [MODULE...]
# writes PREFIX.xml (JUnit, one <testcase> per test id), PREFIX.log (regrtest's output,
# with one line per module) and PREFIX.status
set -u
prefix=$1
shift
match=()
if [ "${1:-}" = --matchfile ]; then match=(--matchfile "$2"); shift 2; fi

# The slowest first: regrtest hands modules to its workers in this order. test_asyncio
# is split into its modules so that they spread over the workers.
modules=(test_signal test_socket test_subprocess test_logging test_faulthandler test_io
	test_os test_posix test_select test_selectors test_poll test_epoll test_socketserver
	test_threading test_thread test_threadsignals test_threading_local test_threadedtempfile
	test_mmap test_fcntl test_ioctl test_pty test_openpty
	test_eintr test_wait3 test_wait4 test_fork1 test_resource test_pwd test_grp
	test_shutil test_tempfile test_pathlib test_posixpath test_genericpath test_glob test_stat
	test_fileio test_file test_file_eintr test_mailbox test_time test_sched test_getpass
	test_httpservers test_cmd_line test_cmd_line_script test_sysconfig test_platform
	test_multiprocessing_main_handling)
for m in /usr/lib/python3.11/test/test_asyncio/test_*.py; do
	m=${m##*/}
	m=${m%.py}
	case $m in *windows*) continue ;; esac
	modules+=("test_asyncio.$m")
done
[ $# -gt 0 ] && modules=("$@")

# Not run on either side (cpython-ignore.txt says why for each).
ignore=()
while read -r pat _; do
	case $pat in '' | '#'*) continue ;; esac
	ignore+=(-i "$pat")
done <"$(dirname "$0")/cpython-ignore.txt"

# -v: a test that fails only in subTests has no name in the JUnit file; the verbose log
# names it (FAIL:/ERROR: lines), and compare.py reads both. regrtest's work directory is
# its default, below /tmp (the host's outside, the sandbox's tmpfs inside: both short
# paths, which AF_UNIX socket tests need).
# Resources: all but the ones that need the internet beyond a DNS lookup (urlfetch),
# minutes of CPU, GBs of disk or a display. `network` stays: test_socketserver needs it
# and uses loopback only.
/usr/bin/python3 -m test -v -j6 --timeout 300 -u all,-urlfetch,-largefile,-cpu,-gui,-audio \
	--junit-xml "$PWD/$prefix.xml" "${ignore[@]}" "${match[@]}" \
	"${modules[@]}" </dev/null >"$prefix.log" 2>&1
st=$?
echo "$st" >"$prefix.status"
exit 0
