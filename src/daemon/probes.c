// SPDX-License-Identifier: MIT
#include "probes.h"
#include "log.h"
#include "barrierd.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A printf-like callback: so marked, compilers check its callers' formats, not its own. */
__attribute__((format(printf, 2, 0))) static int libbpf_quiet(enum libbpf_print_level level,
							      const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !log_verbose)
		return 0;
	if (level != LIBBPF_WARN && !log_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int probes_load(struct probes *b, uint64_t ncpu, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	memset(b, 0, sizeof(*b));
	b->ncpu = ncpu;
	libbpf_set_print(libbpf_quiet);
	b->skel = barrierd_bpf__open();
	if (!b->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-ret));
		return ret;
	}
	ret = bpf_map__set_max_entries(b->skel->maps.slots, (uint32_t)ncpu);
	if (!ret)
		ret = barrierd_bpf__load(b->skel);
	if (ret) {
		snprintf(err, errlen,
			 "cannot load the BPF programs: %s (barrierd needs root, or CAP_BPF and "
			 "CAP_PERFMON, and a kernel with BTF)",
			 strerror(-ret));
		goto fail;
	}
	b->slots_len =
	    ((ncpu * sizeof(struct barrierd_slot)) + (size_t)page - 1) & ~((size_t)page - 1);
	/* Writable only until probes_freeze(): the offline CPUs' idle words. */
	b->slots = mmap(NULL, b->slots_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(b->skel->maps.slots), 0);
	if (b->slots == MAP_FAILED) {
		ret = -errno;
		b->slots = NULL;
		snprintf(err, errlen, "cannot map the slot array: %s", strerror(-ret));
		goto fail;
	}
	b->vtime = (volatile uint64_t *)&b->skel->bss->vtime;
	b->watermark = (volatile uint64_t *)&b->skel->bss->watermark;
	b->main_switches = (volatile uint64_t *)&b->skel->bss->main_switches;
	b->quiet_cpu = (volatile uint64_t *)&b->skel->bss->quiet_cpu;
	b->quiet_upto = (volatile uint64_t *)&b->skel->bss->quiet_upto;
	return 0;
fail:
	probes_destroy(b);
	return ret;
}

int probes_whoami(struct probes *b, uint32_t *tid)
{
	uint64_t dummy[1] = {0};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = dummy, .ctx_size_in = sizeof(dummy));
	int ret;

	b->skel->bss->whoami_tid = 0;
	ret = bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.barrierd_whoami), &opts);
	if (ret)
		return -errno;
	*tid = (uint32_t)b->skel->bss->whoami_tid;
	return *tid ? 0 : -ESRCH;
}

int probes_add_daemon_tid(struct probes *b, uint32_t tid, bool main)
{
	volatile uint32_t *tids = b->skel->bss->daemon_tids;

	if (main)
		b->skel->bss->main_tid = tid;
	for (int i = 0; i < BARRIERD_MAX_DAEMON_TIDS; i++) {
		if (tids[i] == 0 || tids[i] == tid) {
			tids[i] = tid;
			return 0;
		}
	}
	return -ENOSPC;
}

/* A record only wakes the main loop, which then folds: nothing in it is read. */
static int on_signal(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

/* The kernel's id of a link, for logs (and for tests that detach it on purpose). */
static unsigned link_id(struct bpf_link *l)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len))
		return 0;
	return info.id;
}

int probes_attach(struct probes *b, const struct resolved_tp *tps, size_t n, char *err,
		  size_t errlen)
{
	struct bpf_link *l;
	bool switch_listed = false;
	int ret;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(tps[i].category, "sched") && !strcmp(tps[i].name, "sched_switch"))
			switch_listed = true;
	b->skel->bss->switch_stamps = switch_listed;
	b->switch_stamps = switch_listed;

	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.signal_rb), on_signal, b, NULL);
	if (!b->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot set up the ring buffer: %s", strerror(-ret));
		return ret;
	}

	/* The idle tracker, whatever the list says (rule 2). */
	l = bpf_program__attach(b->skel->progs.barrierd_switch);
	if (!l) {
		ret = -errno;
		snprintf(err, errlen, "cannot attach to sched/sched_switch: %s", strerror(-ret));
		return ret;
	}
	b->links[b->n_links++] = l;
	log_debug("attached sched/sched_switch (idle tracking%s; link id %u)",
		  switch_listed ? " and evidence" : " only", link_id(l));

	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		if (!strcmp(tps[i].category, "sched") && !strcmp(tps[i].name, "sched_switch"))
			continue;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(tps[i].category, tps[j].category) &&
			    !strcmp(tps[i].name, tps[j].name))
				dup = true;
		if (dup)
			continue;
		l = bpf_program__attach_raw_tracepoint(b->skel->progs.barrierd_event, tps[i].name);
		if (!l) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach to tracepoint %s/%s: %s%s",
				 tps[i].category, tps[i].name, strerror(-ret),
				 ret == -ENOENT ? " (unknown tracepoint)" : "");
			return ret;
		}
		b->links[b->n_links++] = l;
		log_debug("attached %s/%s (evidence; link id %u)", tps[i].category, tps[i].name,
			  link_id(l));
	}
	return 0;
}

int probes_freeze(struct probes *b, const uint8_t *online)
{
	int fd = bpf_map__fd(b->skel->maps.slots), ret = 0;
	void *ro;

	/*
	 * CLIENT-EVIDENCE §6: a CPU offline now has never switched since the programs were attached
	 * (its word is UNKNOWN).  Its first switch to a task, traced since its online bit is set
	 * before it runs any, will exchange BUSY after this compare-and-swap in the word's order;
	 * a CPU that came up and switched since the caller's mask read exchanged IDLE or BUSY
	 * there already, and the swap fails.  So IDLE is rule 2's evidence for any later load.
	 * The caller read the mask after an MFENCE that followed the attach.
	 */
	for (uint64_t c = 0; online && c < b->ncpu; c++) {
		__u64 unknown = BARRIERD_SLOT_UNKNOWN;

		if (!online[c])
			__atomic_compare_exchange_n(&b->slots[c].idle, &unknown,
						    (__u64)BARRIERD_SLOT_IDLE, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	/*
	 * Freeze (no writable mapping may exist, or EBUSY): from now on only the programs write
	 * the slots, and a descriptor of the map can be handed to anyone (docs/PROTOCOL.md §6.12).
	 * The daemon keeps a read-only mapping: its idle credit is a load after MFENCE (rule 2).
	 */
	munmap(b->slots, b->slots_len);
	b->slots = NULL;
	if (bpf_map_freeze(fd))
		ret = -errno;
	b->frozen = ret == 0;
	ro = mmap(NULL, b->slots_len, PROT_READ, MAP_SHARED, fd, 0);
	if (ro == MAP_FAILED)
		return -errno;
	b->slots = ro;
	return ret;
}

int probes_share_fds(const struct probes *b, int *fds, size_t max)
{
	/*
	 * The map and the sched_switch link (links[0]) only: that link is what keeps the idle
	 * words live (CLIENT-EVIDENCE §2); a stamp stays evidence in a slot nobody updates, so the
	 * evidence links are not handed out, and a client keeps no more of the tracer than the
	 * idle exchange.  Two descriptors (and the anchor's two) bound what a reply holds in
	 * flight.
	 */
	if (!b->frozen || max < 2 || !b->n_links || !b->links[0])
		return -ENOSPC;
	fds[0] = bpf_map__fd(b->skel->maps.slots);
	fds[1] = bpf_link__fd(b->links[0]);
	return 2;
}

void probes_detach_switch(struct probes *b)
{
	/* links[0] is always sched_switch: attached first. */
	if (b->n_links && b->links[0]) {
		bpf_link__destroy(b->links[0]);
		b->links[0] = NULL;
	}
}

int probes_drain(struct probes *b)
{
	return ring_buffer__consume(b->rb);
}

int probes_rb_fd(struct probes *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

void probes_destroy(struct probes *b)
{
	/*
	 * Clients may hold the sched_switch link past our exit (rule 11): leave it doing only
	 * what they need, the idle exchange (no stamps, no signals to a ring nobody reads).
	 */
	if (b->skel && b->skel->bss) {
		b->skel->bss->switch_stamps = 0;
		b->skel->bss->watermark = 0;
	}
	for (size_t i = 0; i < b->n_links; i++)
		if (b->links[i])
			bpf_link__destroy(b->links[i]);
	b->n_links = 0;
	if (b->rb)
		ring_buffer__free(b->rb);
	b->rb = NULL;
	if (b->slots)
		munmap(b->slots, b->slots_len);
	b->slots = NULL;
	if (b->skel)
		barrierd_bpf__destroy(b->skel);
	b->skel = NULL;
}
