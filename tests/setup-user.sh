#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Create the unprivileged user the live tests switch to, with subordinate id ranges so
# that newuidmap mode is exercised (and `unshare -r` as that user gives the single
# mapping). Idempotent. Needs root.
set -eu
user=${TS_TEST_USER:-tsbx-test}
if ! id "$user" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/bash "$user"
fi
grep -q "^$user:" /etc/subuid 2>/dev/null || usermod --add-subuids 300000-365535 "$user"
grep -q "^$user:" /etc/subgid 2>/dev/null || usermod --add-subgids 300000-365535 "$user"
echo "test user $user: $(grep "^$user:" /etc/subuid)"
