// SPDX-License-Identifier: MIT
#include "proc_interrupts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const proc_interrupts_rows[IPI_KINDS] = {"CAL", "RES", "IWI", "TLB"};

int proc_interrupts_open(struct proc_interrupts *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->fd = open("/proc/interrupts", O_RDONLY | O_CLOEXEC);
	return pi->fd < 0 ? -errno : 0;
}

void proc_interrupts_close(struct proc_interrupts *pi)
{
	if (pi->fd >= 0)
		close(pi->fd);
	pi->fd = -1;
	free(pi->buf);
	free(pi->col_cpu);
	pi->buf = NULL;
	pi->col_cpu = NULL;
}

/*
 * The whole file into pi->buf, NUL-terminated; the header's "CPUn" columns into col_cpu.  The
 * file is a seq_file: a pread at offset 0 generates it anew, so one descriptor serves every
 * sample.
 */
static int slurp(struct proc_interrupts *pi)
{
	size_t len = 0;
	int ncols = 0;

	if (pi->fd < 0)
		return -ENOENT;
	for (;;) {
		ssize_t n;

		if (pi->cap - len < 4096) {
			char *nb = realloc(pi->buf, pi->cap * 2 + 16384);

			if (!nb)
				return -ENOMEM;
			pi->buf = nb;
			pi->cap = pi->cap * 2 + 16384;
		}
		n = pread(pi->fd, pi->buf + len, pi->cap - len - 1, (off_t)len);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	pi->buf[len] = 0;
	/* The header names one column per online CPU: "CPU0 CPU1 ...". */
	for (const char *p = pi->buf; *p && *p != '\n'; p++)
		if (p[0] == 'C' && p[1] == 'P' && p[2] == 'U')
			ncols++;
	free(pi->col_cpu);
	pi->col_cpu = calloc((size_t)ncols + 1, sizeof(int));
	if (!pi->col_cpu)
		return -ENOMEM;
	pi->ncols = 0;
	for (const char *p = pi->buf; *p && *p != '\n'; p++)
		if (p[0] == 'C' && p[1] == 'P' && p[2] == 'U')
			pi->col_cpu[pi->ncols++] = atoi(p + 3);
	return 0;
}

/* Our rows: per CPU into out[cpu * IPI_KINDS + kind] (maxcpu > 0), or summed into out[kind]. */
static void parse(struct proc_interrupts *pi, uint64_t *out, int maxcpu)
{
	for (char *line = strchr(pi->buf, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		char *p = line + 1;

		while (*p == ' ')
			p++;
		for (int k = 0; k < IPI_KINDS; k++) {
			if (strncmp(p, proc_interrupts_rows[k], 3) || p[3] != ':')
				continue;
			p += 4;
			/* Exactly ncols counters; the description after them is not a number. */
			for (int c = 0; c < pi->ncols; c++) {
				char *end;
				unsigned long long v = strtoull(p, &end, 10);
				int cpu = pi->col_cpu[c];

				if (end == p)
					break;
				if (maxcpu == 0)
					out[k] += v;
				else if (cpu >= 0 && cpu < maxcpu)
					out[(size_t)cpu * IPI_KINDS + (size_t)k] = v;
				p = end;
			}
		}
	}
}

int proc_interrupts_read(struct proc_interrupts *pi, uint64_t *out, int maxcpu)
{
	int ret = slurp(pi);

	if (ret)
		return ret;
	memset(out, 0, (size_t)maxcpu * IPI_KINDS * sizeof(*out));
	parse(pi, out, maxcpu);
	return 0;
}

int proc_interrupts_sum(struct proc_interrupts *pi, uint64_t out[IPI_KINDS])
{
	int ret = slurp(pi);

	if (ret)
		return ret;
	memset(out, 0, IPI_KINDS * sizeof(*out));
	parse(pi, out, 0);
	return 0;
}
