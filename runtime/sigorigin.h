/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Where a signal that reached init came from. init acts on a signal (forwarding it, or a
 * durable init stopping) only when it provably comes from outside the sandbox: sent with
 * kill(2), tgkill(2) or pidfd_send_signal(2) (si_code SI_USER) by a process outside our
 * PID namespace (the kernel reports the sender's pid as 0 then).
 *
 * Neither half is enough alone. A process inside can forge si_pid = 0 with
 * rt_sigqueueinfo(2), but the kernel refuses it any si_code >= 0 towards another
 * process, so a forged signal never says SI_USER; and a signal the kernel sends on a
 * process's behalf (SIGIO/F_SETSIG after fcntl(F_SETOWN, 1), SIGURG, a timer) has
 * si_pid 0 with si_code POLL_*, SI_KERNEL, SI_TIMER and the like. SI_USER from inside
 * always carries the sender's real pid.
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/signalfd.h>

static inline bool ts_signal_from_outside(const struct signalfd_siginfo *si)
{
	return si->ssi_code == SI_USER && si->ssi_pid == 0;
}
