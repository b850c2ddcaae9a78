/* SPDX-License-Identifier: MIT */
/*
 * Is LFENCE known to be dispatch-serialising on this CPU (docs/DESIGN.md, "Assumptions")?  Every
 * clock read that orders evidence (the stamps, the credit passes' r, the fallback's r) relies on
 * it.  Not checkable in a guest; this only names the case where nothing vouches for it.
 */
#ifndef BARRIERD_LFENCE_CHECK_H
#define BARRIERD_LFENCE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* What CPUID says, as lfence_doubt() needs it. */
struct lfence_cpuid {
	char vendor[13];     /* leaf 0, NUL-terminated */
	unsigned max_ext;    /* leaf 0x80000000 EAX */
	unsigned ext_21_eax; /* leaf 0x80000021 EAX, when max_ext reaches it; else 0 */
	bool hypervisor;     /* leaf 1 ECX bit 31 */
};

/* This CPU's CPUID. */
void lfence_cpuid_read(struct lfence_cpuid *c);

/*
 * 0 when LFENCE is known to serialise dispatch: an Intel CPU (architectural), an AMD or Hygon
 * CPU that reports LfenceAlwaysSerializing (leaf 0x80000021 EAX bit 2), or one on bare metal,
 * where Linux sets the DE_CFG bit at boot; other vendors too (not known either way: DESIGN
 * lists the assumption).  1 for an AMD or Hygon CPU in a guest without that bit: it holds only
 * if the host set DE_CFG.  Why, in err, either way.
 */
int lfence_doubt(const struct lfence_cpuid *c, char *err, size_t errlen);

#endif
