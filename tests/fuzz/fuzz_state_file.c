// SPDX-License-Identifier: MIT
/*
 * fuzz_state_file - libFuzzer target: the bytes are a state file, as a client sees it.
 *
 * 1. bd_validate on an exact-size heap copy (ASan sees a read one byte past the end), and
 *    what its callers rely on: -EPROTO with nothing, or an ncpu of 1..BARRIERD_MAX_CPUS whose
 *    per-CPU array fits, and an extension (if flagged) inside the bytes with room for ncpu
 *    entries.
 * 2. The read paths on that copy: a handle like barrierd_open's around it, with the clock
 *    offset chosen so that "now" is the file's latest time (as if it were opened at that
 *    moment; otherwise random bytes would never look live).  barrierd_passed, _passed_vtime,
 *    _live, _stamp_vtime, _request, _mapping, bd_cpus_passed, and the three waits with a
 *    timeout of 0 (they never sleep then).  What a yes means is checked against the bytes
 *    (DESIGN rules 9 and 10): an ns value counts only above the stamp and only while running,
 *    else up to the stop snapshot; a vtime only while running.
 * 3. The whole barrierd_open on a file holding the bytes (path trust, fstat, mmap, validation,
 *    the clock check), in a private directory under $TMPDIR, with the same read paths on the
 *    real mapping; and, for a file with an extension, an open of it without one (the flag
 *    cleared, cut after the per-CPU array), then the file grown to the full bytes and
 *    bd_ext_refresh, as when a daemon lays out a new file while a client holds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handle.h"
#include "mapping.h"
#include "published.h"
#include "timens.h"

/* 2^62 ns, 146 years: no clock after a boot is that late. */
#define MAX_PLAUSIBLE_NS (1ULL << 62)

static char dir[256], path[512];
static struct barrierd *tmpl; /* a real handle: the process's time namespace, as open sets it */
static struct barrierd_open_opts opts = {.sz = sizeof(opts)};

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_state_file: invariant broken: %s\n", what);
		abort();
	}
}

static int write_file(const void *buf, size_t size, int trunc)
{
	ssize_t n = 0;
	int fd;

	/* A new inode rather than O_TRUNC: truncating a file mapped a moment ago costs ms. */
	if (trunc)
		unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (size)
		n = pwrite(fd, buf, size, 0);
	close(fd);
	return n == (ssize_t)size ? 0 : -1;
}

static void cleanup(void)
{
	if (tmpl)
		barrierd_close(tmpl);
	unlink(path);
	rmdir(dir);
}

static void init(void)
{
	const char *tmp = getenv("TMPDIR");
	uint8_t img[512];
	struct barrierd_header *h = (void *)img;
	int ret;

	snprintf(dir, sizeof(dir), "%s/bd-fuzz-state-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	atexit(cleanup);
	/* Trusted as root owns it, or as its owner names itself (the tests' way without root). */
	if (geteuid() != 0) {
		opts.trusted_uid_set = 1;
		opts.trusted_uid = geteuid();
	}
	/* One CPU, no extension, every time 0: opens anywhere. */
	memset(img, 0, sizeof(img));
	h->ncpu = 1;
	h->magic = BARRIERD_MAGIC;
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->header_size = sizeof(*h);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	if (write_file(img, barrierd_file_size(1), 1)) {
		perror(path);
		abort();
	}
	ret = barrierd_open_opts(&tmpl, path, &opts);
	if (ret) {
		fprintf(stderr, "fuzz_state_file: cannot open a valid file: %s\n", strerror(-ret));
		abort();
	}
}

static bool running(uint64_t f)
{
	return (f & BARRIERD_FLAG_RUNNING) && !(f & BARRIERD_FLAG_STOPPED);
}

static uint64_t max_time(const struct barrierd_header *h, const struct barrierd_ext *x,
			 uint64_t ncpu)
{
	uint64_t m =
	    h->last_interrupt_ns > h->heartbeat_ns ? h->last_interrupt_ns : h->heartbeat_ns;

	for (uint64_t c = 0; c < ncpu; c++)
		if (h->per_cpu[c].last_interrupt_ns > m)
			m = h->per_cpu[c].last_interrupt_ns;
	if (x && x->last_advance_ns > m)
		m = x->last_advance_ns;
	return m;
}

/* Could a yes for ns stamp s be true of these bytes (they do not change here)? */
static bool ns_may_pass(const struct barrierd *b, uint64_t s)
{
	const struct barrierd_ext *x = bd_ext(b);

	if (b->hdr->last_interrupt_ns <= s)
		return false;
	return running(b->hdr->flags) || (x && x->stop_ns > s);
}

/* What a wait may return on any file: -EIDRM when its path no longer names the mapped file. */
static bool wait_result_ok(int r)
{
	return r == 0 || r == -ETIMEDOUT || r == -ESTALE || r == -EPROTO || r == -EIDRM;
}

static void read_paths(struct barrierd *b)
{
	const struct barrierd_header *h = b->hdr;
	uint64_t stamps[5], vt[3];
	unsigned long all[1024 / (8 * sizeof(long))], last[1024 / (8 * sizeof(long))];
	size_t msize = 0;
	int r;

	stamps[0] = b->open_ns + 1;
	stamps[1] = h->last_interrupt_ns - 1;
	stamps[2] = h->last_interrupt_ns;
	stamps[3] = h->per_cpu[0].last_interrupt_ns;
	stamps[4] = UINT64_MAX - 1;
	vt[0] = h->last_interrupt_vtime - 1;
	vt[1] = h->last_interrupt_vtime;
	vt[2] = barrierd_stamp_vtime(b);
	memset(all, 0xff, sizeof(all));
	memset(last, 0, sizeof(last));
	if (b->ncpu <= 1024)
		last[(b->ncpu - 1) / (8 * sizeof(long))] = 1UL
							   << ((b->ncpu - 1) % (8 * sizeof(long)));

	for (int i = 0; i < 5; i++) {
		uint64_t s = stamps[i];

		if (barrierd_passed(b, s))
			check(s > b->open_ns && ns_may_pass(b, s),
			      "passed: a value above the stamp");
		if (bd_cpus_passed(b, all, 1024, s))
			check(running(h->flags), "per-CPU values count only while running");
		(void)bd_trusted(b, &h->last_interrupt_ns, 0);
		if (s > b->open_ns) {
			r = barrierd_wait(b, s, 0);
			check(wait_result_ok(r), "wait");
			if (r == 0)
				check(ns_may_pass(b, s), "wait: a value above the stamp");
			r = barrierd_wait_cpus(b, s, all, sizeof(all), 0);
			check(wait_result_ok(r), "wait_cpus");
			r = barrierd_wait_cpus(b, s, last, sizeof(last), 0);
			check(wait_result_ok(r), "wait_cpus");
		}
	}
	for (int i = 0; i < 3; i++) {
		if (barrierd_passed_vtime(b, vt[i]))
			check(running(h->flags) && h->last_interrupt_vtime > vt[i],
			      "a vtime counts only while running");
		r = barrierd_wait_vtime(b, vt[i], 0);
		check(wait_result_ok(r), "wait_vtime");
		if (r == 0)
			check(running(h->flags), "wait_vtime: only while running");
	}
	if (barrierd_live(b))
		check(running(h->flags), "live: running and not stopped");
	check(barrierd_request(b) <= 0, "request");
	check(barrierd_mapping(b, &msize) != NULL && msize >= sizeof(*h) + b->ncpu * 16, "mapping");
}

/* 2: a handle around an exact-size heap copy that bd_validate accepted. */
static void copy_handle(const struct barrierd_header *h, size_t size, const struct barrierd_ext *x,
			uint64_t ncpu)
{
	struct barrierd b = *tmpl;
	uint64_t now = max_time(h, x, ncpu);
	int64_t off = (int64_t)(bd_clock_raw() - now);

	/*
	 * No machine's CLOCK_MONOTONIC gets near 2^64 (584 years), and open refuses a file with
	 * times above the clock: a "now" up there would only make the clock wrap within a wait.
	 */
	if (now > MAX_PLAUSIBLE_NS)
		return;
	b.hdr = h;
	b.size = size;
	b.ext = x;
	b.ncpu = ncpu;
	b.fd = -1;
	b.map2 = NULL;
	b.ext_busy = 0;
	/* As if opened at the file's latest time: the clock offset makes that moment "now". */
	b.timens_off = off == INT64_MIN ? off + 1 : off;
	b.open_ns = now;
	b.valid_after = now;
	read_paths(&b);
}

/* 3: the real open of a file holding the bytes. */
static void open_file(const uint8_t *data, size_t size, int valid, uint64_t ncpu, size_t xo)
{
	struct barrierd *b;
	int ret;

	if (write_file(data, size, 1))
		return;
	ret = barrierd_open_opts(&b, path, &opts);
	check(ret == 0 || ret == -EPROTO || ret == -ESTALE, "open: -EPROTO or -ESTALE");
	check(valid || ret == -EPROTO, "open refuses what bd_validate refuses");
	check(!valid || ret != -EPROTO, "open takes what bd_validate takes");
	if (ret)
		return;
	check(b->ncpu == ncpu, "open: ncpu");
	check(xo ? bd_ext(b) && (size_t)((const char *)bd_ext(b) - (const char *)b->hdr) == xo
		 : !bd_ext(b),
	      "open: the extension bd_validate found");
	read_paths(b);
	barrierd_close(b);
}

/* 3, grown: opened before the extension existed, refreshed once the file holds it. */
static void open_grown(const uint8_t *data, size_t size, uint64_t ncpu, size_t xo)
{
	size_t cut = sizeof(struct barrierd_header) + ncpu * sizeof(struct barrierd_cpu);
	uint8_t *first = malloc(cut);
	struct barrierd_header *h = (void *)first;
	struct barrierd *b;
	int ret;

	memcpy(first, data, cut);
	h->flags &= ~BARRIERD_FEAT_EXTENSION;
	ret = write_file(first, cut, 1);
	free(first);
	if (ret)
		return;
	ret = barrierd_open_opts(&b, path, &opts);
	check(ret == 0 || ret == -ESTALE, "open without the extension");
	if (ret)
		return;
	check(!bd_ext(b) && b->fd >= 0, "no extension yet: the file is kept open");
	/* The daemon lays the extension out, then sets the flag: here, all bytes at once. */
	if (write_file(data, size, 0) == 0) {
		bd_ext_refresh(b);
		check(bd_ext(b) != NULL, "the extension is found once it is there");
		check(b->map2 ? (size_t)((const char *)bd_ext(b) - (const char *)b->map2) == xo
			      : (size_t)((const char *)bd_ext(b) - (const char *)b->hdr) == xo,
		      "at the offset bd_validate found");
		read_paths(b);
	}
	barrierd_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct barrierd_ext *x = (void *)1;
	struct barrierd_header *h;
	uint64_t ncpu = 1;
	size_t xo = 0;
	int ret;

	if (!tmpl)
		init();
	/* 1 */
	h = malloc(size ? size : 1);
	memcpy(h, data, size);
	ret = bd_validate(h, size, &x, &ncpu);
	check(ret == 0 || ret == -EPROTO, "validate: 0 or -EPROTO");
	if (ret) {
		check(x == NULL && ncpu == 0, "refused: no extension, no ncpu");
	} else {
		check(ncpu >= 1 && ncpu <= BARRIERD_MAX_CPUS && ncpu == h->ncpu, "ncpu");
		check(sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) <= size,
		      "per-CPU array fits");
		check(!x == !(h->flags & BARRIERD_FEAT_EXTENSION), "an extension iff flagged");
		if (x) {
			xo = (size_t)((const char *)x - (const char *)h);
			check(xo >= sizeof(*h) + ncpu * sizeof(struct barrierd_cpu) &&
				  xo + sizeof(*x) + ncpu * sizeof(struct barrierd_ext_cpu) <= size,
			      "the extension fits after the per-CPU array");
		}
		/* 2 */
		copy_handle(h, size, x, ncpu);
	}
	free(h);
	/* 3 */
	open_file(data, size, ret == 0, ncpu, xo);
	if (ret == 0 && xo)
		open_grown(data, size, ncpu, xo);
	return 0;
}
