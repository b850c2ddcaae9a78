// SPDX-License-Identifier: MIT
/* Built against an installed libbarrierd with pkg-config: open a state file, one barrier. */
#include <barrierd.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct barrierd *b;
	int ret = barrierd_open(&b, argc > 1 ? argv[1] : NULL);

	if (ret) {
		fprintf(stderr, "hello: barrierd_open: %s\n", strerror(-ret));
		return 1;
	}
	ret = barrierd_barrier(b, 5000000000LL);
	barrierd_close(b);
	if (ret) {
		fprintf(stderr, "hello: barrierd_barrier: %s\n", strerror(-ret));
		return 1;
	}
	printf("hello: one barrier through the installed library\n");
	return 0;
}
