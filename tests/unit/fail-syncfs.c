/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An LD_PRELOAD object for image-store.py: syncfs(2) fails with EIO, as it does after a
 * write error of the store's file system since the store was opened. The write-behind of
 * ts_layer_unpack (oci-layer.c) only learns of its write errors there, so this is the one
 * place such an error can reach an import; no faulty disk is needed to get there, because
 * the store's syncfs goes through libc.
 */
#include <errno.h>
#include <unistd.h>

int syncfs(int fd)
{
	(void)fd;
	errno = EIO;
	return -1;
}
