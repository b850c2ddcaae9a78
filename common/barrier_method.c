// SPDX-License-Identifier: MIT
#include "barrier_method.h"

#include <barrierd.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *const barrier_method_names[BM_COUNT] = {
    [BM_BARRIERD] = "barrierd",
    [BM_VTIME] = "vtime",
    [BM_MEMBARRIER_GLOBAL] = "membarrier-global",
    [BM_PRIVATE_EXPEDITED] = "private-expedited",
    [BM_MPROTECT] = "mprotect",
    [BM_GLOBAL_EXPEDITED] = "global-expedited",
    [BM_DIRECT] = "direct",
    [BM_FILE] = "file",
};

int barrier_method_lookup(const char *name, size_t len)
{
	for (int m = 0; m < BM_COUNT; m++)
		if (strlen(barrier_method_names[m]) == len &&
		    strncmp(name, barrier_method_names[m], len) == 0)
			return m;
	return -1;
}

int membarrier_call(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0) < 0 ? -errno : 0;
}

int barrier_method_map_page(struct barrier_method_ctx *c)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *page;

	c->page_size = ps > 0 ? (size_t)ps : 4096;
	page = mmap(NULL, c->page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -errno;
	c->page = page;
	c->page[0] = 1;
	/* Resident for the run, so the trick never takes a page fault instead of a flush. */
	(void)mlock(page, c->page_size);
	return 0;
}

void barrier_method_unmap_page(struct barrier_method_ctx *c)
{
	if (c->page)
		munmap((void *)c->page, c->page_size);
	c->page = NULL;
}

int barrier_method_call(const struct barrier_method_ctx *c, enum barrier_method m)
{
	switch (m) {
	case BM_BARRIERD:
	case BM_DIRECT:
		return barrierd_barrier(c->b, BARRIER_METHOD_TIMEOUT_NS);
	case BM_FILE:
		return barrierd_barrier(c->b_file, BARRIER_METHOD_TIMEOUT_NS);
	case BM_VTIME:
		return barrierd_wait_vtime(c->b, barrierd_stamp_vtime(c->b),
					   BARRIER_METHOD_TIMEOUT_NS);
	case BM_MEMBARRIER_GLOBAL:
		return membarrier_call(MEMBARRIER_CMD_GLOBAL);
	case BM_PRIVATE_EXPEDITED:
		return membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	case BM_GLOBAL_EXPEDITED:
		return membarrier_call(MEMBARRIER_CMD_GLOBAL_EXPEDITED);
	case BM_MPROTECT:
		/*
		 * Make the page writable and dirty it (so the mapping is present), then take the
		 * write permission away: the kernel must flush the page from every TLB that may
		 * hold it, with an IPI to each CPU running this mm, and wait for them all.
		 */
		if (mprotect((void *)c->page, c->page_size, PROT_READ | PROT_WRITE))
			return -errno;
		c->page[0]++;
		if (mprotect((void *)c->page, c->page_size, PROT_READ))
			return -errno;
		return 0;
	default:
		return -EINVAL;
	}
}
