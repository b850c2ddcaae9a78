// SPDX-License-Identifier: MIT
/*
 * The event counts' inline increments as a program compiles them, for check_disasm.sh ec: the
 * waiter's argument (lib/primitives/ec.c) needs the single producer's increment to be one xadd
 * without lock, and the multi-producer's to be locked.  Built with the project's flags, never
 * linked.
 */
#include <barrierd_ec.h>

void probe_inc_sp(struct barrierd_ec *ec);
void probe_add_sp(struct barrierd_ec *ec, uint64_t delta);
void probe_inc(struct barrierd_ec *ec);

void probe_inc_sp(struct barrierd_ec *ec)
{
	barrierd_ec_inc_sp(ec);
}

void probe_add_sp(struct barrierd_ec *ec, uint64_t delta)
{
	barrierd_ec_add_sp(ec, delta);
}

void probe_inc(struct barrierd_ec *ec)
{
	barrierd_ec_inc(ec);
}
