// SPDX-License-Identifier: MIT
/* quickstart: one barrier.  cc quickstart.c $(pkg-config --cflags --libs barrierd) */
#include <barrierd.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	struct barrierd *b;
	int err = barrierd_open(&b, NULL); /* $BARRIERD_STATE, or /run/barrierd/state */

	if (err) {
		fprintf(stderr, "barrierd_open: %s\n", strerror(-err));
		return 1;
	}
	err = barrierd_barrier(b, 1000000000); /* like membarrier(GLOBAL); give up after 1 s */
	if (err == 0)
		printf("barrier passed: every CPU has serialised since the call\n");
	else if (err == -ETIMEDOUT)
		printf("no barrier within 1 s\n");
	else
		fprintf(stderr, "barrierd_barrier: %s\n", strerror(-err));
	barrierd_close(b);
	return err ? 1 : 0;
}
