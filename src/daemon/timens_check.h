/* SPDX-License-Identifier: MIT */
/*
 * Refuse to run inside a time namespace with a CLOCK_MONOTONIC offset: every published time is
 * host CLOCK_MONOTONIC (DESIGN rule 5; docs/DESIGN.md, "Assumptions").
 */
#ifndef BARRIERD_TIMENS_CHECK_H
#define BARRIERD_TIMENS_CHECK_H

#include <stddef.h>

/* 0 when CLOCK_MONOTONIC is the kernel's (what BPF's bpf_ktime_get_ns() reads). */
int timens_check(char *err, size_t errlen);

#endif
