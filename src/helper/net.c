/* SPDX-License-Identifier: Apache-2.0 */
#include "net.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

/* libnl-3 core only (no libnl-route): one RTM_NEWLINK with IFF_UP for `lo`. */
int ts_net_loopback_up(struct ts_error *err)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_flags = IFF_UP,
		.ifi_change = IFF_UP,
	};
	struct nl_sock *sk;
	struct nl_msg *msg = NULL;
	int r;

	ifi.ifi_index = (int)if_nametoindex("lo");
	if (ifi.ifi_index == 0)
		return ts_err_errno(err, -errno, "find interface `lo`");
	sk = nl_socket_alloc();
	if (!sk)
		return ts_err(err, -ENOMEM, "allocate netlink socket");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		r = ts_err(err, -EIO, "connect rtnetlink: %s", nl_geterror(r));
		goto out;
	}
	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
		r = ts_err(err, -ENOMEM, "build netlink message");
		goto out;
	}
	r = nl_send_auto(sk, msg);
	if (r >= 0)
		r = nl_wait_for_ack(sk);
	if (r < 0)
		r = ts_err(err, -EIO, "bring `lo` up: %s", nl_geterror(r));
	else
		r = 0;
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return r;
}
