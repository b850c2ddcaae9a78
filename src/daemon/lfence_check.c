// SPDX-License-Identifier: MIT
#include "lfence_check.h"

#include <cpuid.h>
#include <stdio.h>
#include <string.h>

#define AMD_LFENCE_ALWAYS_SERIALIZING (1u << 2) /* CPUID 0x80000021 EAX */
#define CPUID_HYPERVISOR (1u << 31)		/* CPUID 1 ECX */

void lfence_cpuid_read(struct lfence_cpuid *c)
{
	unsigned a, b, cx, d;

	memset(c, 0, sizeof(*c));
	__cpuid(0, a, b, cx, d);
	memcpy(c->vendor, &b, 4);
	memcpy(c->vendor + 4, &d, 4);
	memcpy(c->vendor + 8, &cx, 4);
	__cpuid(1, a, b, cx, d);
	c->hypervisor = (cx & CPUID_HYPERVISOR) != 0;
	c->max_ext = __get_cpuid_max(0x80000000, NULL);
	if (c->max_ext >= 0x80000021) {
		__cpuid(0x80000021, a, b, cx, d);
		c->ext_21_eax = a;
	}
}

int lfence_doubt(const struct lfence_cpuid *c, char *err, size_t errlen)
{
	bool amd = !strcmp(c->vendor, "AuthenticAMD") || !strcmp(c->vendor, "HygonGenuine");

	if (!strcmp(c->vendor, "GenuineIntel")) {
		snprintf(err, errlen, "%s: dispatch-serialising by architecture", c->vendor);
		return 0;
	}
	if (!amd) {
		snprintf(err, errlen, "%s: not known; assumed (docs/DESIGN.md, Assumptions)",
			 c->vendor);
		return 0;
	}
	if (c->ext_21_eax & AMD_LFENCE_ALWAYS_SERIALIZING) {
		snprintf(err, errlen, "%s: reports LfenceAlwaysSerializing", c->vendor);
		return 0;
	}
	if (!c->hypervisor) {
		snprintf(err, errlen, "%s on bare metal: Linux sets the DE_CFG bit", c->vendor);
		return 0;
	}
	snprintf(err, errlen,
		 "%s CPU in a guest that does not report LfenceAlwaysSerializing (CPUID "
		 "0x80000021 EAX bit 2): LFENCE is dispatch-serialising only if the host set the "
		 "DE_CFG bit, and barrierd's clock reads rely on it (docs/DESIGN.md, Assumptions)",
		 c->vendor);
	return 1;
}
