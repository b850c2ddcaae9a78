// SPDX-License-Identifier: MIT
/*
 * barrierd_open's validation: a valid file maps, every malformed one is refused with -EPROTO
 * (never a crash), a file holding times later than our clock (another boot's) with -ESTALE,
 * and a foreign boot id alone is no reason to refuse (containers have their own).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_daemon.h"

#define NCPU 4

/* Per test: a fresh 0755 directory and a valid image to corrupt. */
struct fx {
	char dir[PATH_MAX / 2];
	char path[PATH_MAX];
	void *img;
	size_t size;
	uint64_t now;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || test_mkdtemp(f->dir, sizeof(f->dir), "/tmp"))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/state", f->dir);
	f->now = bd_mono_ns();
	f->img = fake_image(NCPU, f->now, &f->size);
	if (!f->img)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	test_rmtree(f->dir);
	free(f->img);
	free(f);
	return 0;
}

static struct barrierd_header *H(struct fx *f)
{
	return f->img;
}

static struct barrierd_ext *X(struct fx *f)
{
	return test_ext_of(f->img, NCPU);
}

/* Write `len` bytes of buf as the state file and open it: the result, handle closed. */
static int try_bytes(struct fx *f, const void *buf, size_t len)
{
	struct barrierd *b = NULL;
	int ret;

	assert_int_equal(test_write_file(f->path, buf, len, 0644), 0);
	ret = fake_open_lib(&b, f->path, NULL);
	if (ret == 0) {
		assert_non_null(b);
		/* A handle we got must be usable: exercise the readers once, with no wait. */
		(void)barrierd_passed(b, barrierd_stamp_ns(b));
		(void)barrierd_passed_vtime(b, barrierd_stamp_vtime(b));
		barrierd_close(b);
	} else {
		assert_null(b);
	}
	return ret;
}

static int try_img(struct fx *f)
{
	return try_bytes(f, f->img, f->size);
}

/* Reset the image to valid, so each case below breaks exactly one thing. */
static void reset(struct fx *f)
{
	fake_fill(f->img, NCPU, f->now);
}

static void valid_file_opens(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;
	const struct barrierd_header *m;
	uint64_t before, after;
	size_t sz = 0;

	assert_int_equal(test_write_file(f->path, f->img, f->size, 0644), 0);
	before = bd_mono_ns();
	assert_int_equal(fake_open_lib(&b, f->path, NULL), 0);
	after = bd_mono_ns();
	assert_non_null(b);
	m = barrierd_mapping(b, &sz);
	assert_int_equal(sz, barrierd_file_size(NCPU));
	assert_int_equal(m->ncpu, NCPU);
	assert_int_equal(m->generation, 1);
	/* open_ns is a clock reading taken during the open (no time namespace here). */
	assert_true(barrierd_open_ns(b) >= before);
	assert_true(barrierd_open_ns(b) <= after);
	/* Stamps are not before open_ns, and the clock does not go back. */
	before = barrierd_stamp_ns(b);
	assert_true(before >= barrierd_open_ns(b));
	assert_true(barrierd_stamp_ns(b) >= before);
	assert_int_equal(barrierd_stamp_vtime(b), 10 + NCPU);
	barrierd_close(b);
	barrierd_close(NULL); /* documented no-op */
}

static void open_bad_arguments(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = (void *)1;
	struct barrierd_open_opts o = {.sz = sizeof(o)};
	char missing[PATH_MAX + 16];

	assert_int_equal(test_write_file(f->path, f->img, f->size, 0644), 0);
	assert_int_equal(barrierd_open(NULL, f->path), -EINVAL);
	/* An options struct from a future, smaller... or a caller that forgot .sz. */
	o.sz = 0;
	assert_int_equal(barrierd_open_opts(&b, f->path, &o), -EINVAL);
	assert_null(b);
	o.sz = sizeof(o);
	o.fallback = 7;
	assert_int_equal(fake_open_lib(&b, f->path, &o), -EINVAL);
	snprintf(missing, sizeof(missing), "%s/nonexistent", f->dir);
	assert_int_equal(fake_open_lib(&b, missing, NULL), -ENOENT);
	/* A path naming a directory, not a file. */
	snprintf(missing, sizeof(missing), "%s/", f->dir);
	assert_int_not_equal(fake_open_lib(&b, missing, NULL), 0);
}

static void truncated_below_header(void **state)
{
	struct fx *f = *state;
	static const size_t sizes[] = {0, 1, 8, 32, 64, 120, 127};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_int_equal(try_bytes(f, f->img, sizes[i]), -EPROTO);
}

/* With the extension advertised, any file shorter than the whole layout is refused. */
static void truncated_every_size(void **state)
{
	struct fx *f = *state;
	char *bigger;

	for (size_t len = 0; len < f->size; len++) {
		int ret = try_bytes(f, f->img, len);

		if (ret != -EPROTO)
			fail_msg("file truncated to %zu of %zu bytes: got %d, want -EPROTO", len,
				 f->size, ret);
	}
	assert_int_equal(try_bytes(f, f->img, f->size), 0);
	/* Trailing bytes after the layout are room for a future minor version: accepted. */
	bigger = calloc(1, f->size + 4096);
	assert_non_null(bigger);
	memcpy(bigger, f->img, f->size);
	assert_int_equal(try_bytes(f, bigger, f->size + 4096), 0);
	free(bigger);
}

/* Without the extension, the per-CPU array alone must fit: ncpu * 16 against the size. */
static void truncated_per_cpu_array(void **state)
{
	struct fx *f = *state;
	size_t need = sizeof(struct barrierd_header) + NCPU * sizeof(struct barrierd_cpu);

	H(f)->flags &= ~(BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL);
	assert_int_equal(try_bytes(f, f->img, need), 0); /* control: exactly enough */
	assert_int_equal(try_bytes(f, f->img, need - 1), -EPROTO);
	assert_int_equal(try_bytes(f, f->img, need - 8), -EPROTO);
	assert_int_equal(try_bytes(f, f->img, need - sizeof(struct barrierd_cpu)), -EPROTO);
	assert_int_equal(try_bytes(f, f->img, sizeof(struct barrierd_header)), -EPROTO);
}

static void wrong_magic(void **state)
{
	struct fx *f = *state;

	/* The original daemon's file: its reserved bytes are zero. */
	H(f)->magic = 0;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	H(f)->magic = BARRIERD_MAGIC ^ 1;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	H(f)->magic = __builtin_bswap64(BARRIERD_MAGIC);
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	assert_int_equal(try_img(f), 0);
}

static void abi_versions(void **state)
{
	struct fx *f = *state;

	H(f)->abi_major = BARRIERD_ABI_MAJOR + 1;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	H(f)->abi_major = UINT32_MAX;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	H(f)->abi_major = 0;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	/* A newer minor version only adds what an older reader may ignore. */
	H(f)->abi_minor = BARRIERD_ABI_MINOR + 7;
	assert_int_equal(try_img(f), 0);
	reset(f);
	H(f)->abi_minor = UINT32_MAX;
	assert_int_equal(try_img(f), 0);
	reset(f);
	/* So do unknown feature flags. */
	H(f)->flags |= 1ULL << 40 | 1ULL << 63 | 1ULL << 18;
	assert_int_equal(try_img(f), 0);
}

static void wrong_header_size(void **state)
{
	struct fx *f = *state;
	static const uint32_t bad[] = {0, 32, 64, 127, 129, 136, 256, UINT32_MAX};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset(f);
		H(f)->header_size = bad[i];
		assert_int_equal(try_img(f), -EPROTO);
	}
}

static void wrong_cpu_stride(void **state)
{
	struct fx *f = *state;
	static const uint32_t bad[] = {0, 8, 15, 17, 24, 32, 64, UINT32_MAX};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset(f);
		H(f)->cpu_stride = bad[i];
		assert_int_equal(try_img(f), -EPROTO);
	}
}

static void ncpu_zero(void **state)
{
	struct fx *f = *state;

	H(f)->ncpu = 0;
	assert_int_equal(try_img(f), -EPROTO);
}

static void ncpu_huge(void **state)
{
	struct fx *f = *state;
	static const uint64_t bad[] = {
	    BARRIERD_MAX_CPUS + 1ULL,
	    1ULL << 32,
	    /* ncpu * 16 wraps to 0 or to a small number: must not pass the size check. */
	    1ULL << 60,
	    (1ULL << 60) + 1,
	    UINT64_MAX / 16 + 2,
	    UINT64_MAX,
	};
	size_t sz;
	void *big;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset(f);
		H(f)->ncpu = bad[i];
		assert_int_equal(try_img(f), -EPROTO);
	}

	/* At the limit a complete file is fine; one more CPU, also complete, is refused. */
	big = fake_image(BARRIERD_MAX_CPUS, f->now, &sz);
	assert_non_null(big);
	assert_int_equal(try_bytes(f, big, sz), 0);
	free(big);
	big = fake_image(BARRIERD_MAX_CPUS + 1ULL, f->now, &sz);
	assert_non_null(big);
	assert_int_equal(try_bytes(f, big, sz), -EPROTO);
	free(big);
}

static void extension_out_of_bounds(void **state)
{
	struct fx *f = *state;
	const uint64_t good = barrierd_ext_offset(NCPU);
	const uint64_t bad[] = {
	    0,					   /* over the header */
	    sizeof(struct barrierd_header),	   /* over the per-CPU array */
	    good - 64,				   /* ends inside the per-CPU array */
	    good + 4,				   /* misaligned */
	    good + 64,				   /* its per-CPU entries run past the end */
	    f->size - sizeof(struct barrierd_ext), /* only the ext header fits */
	    f->size,				   /* at the very end */
	    f->size + 64,			   /* past the end */
	    UINT64_MAX & ~63ULL,		   /* offset + size wraps */
	    (UINT64_MAX & ~63ULL) - f->size,
	};

	assert_int_equal(try_img(f), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset(f);
		H(f)->ext_offset = bad[i];
		if (try_img(f) != -EPROTO)
			fail_msg("ext_offset %#llx (case %zu) accepted", (unsigned long long)bad[i],
				 i);
	}
	/*
	 * Misaligned with room to spare, so that only the alignment is wrong (the extension's
	 * words must be naturally aligned for single-copy-atomic loads).
	 */
	{
		char *roomy = calloc(1, f->size + 64);

		assert_non_null(roomy);
		reset(f);
		memcpy(roomy, f->img, f->size);
		memcpy(roomy + good + 4, X(f), f->size - good);
		((struct barrierd_header *)roomy)->ext_offset = good + 4;
		assert_int_equal(try_bytes(f, roomy, f->size + 64), -EPROTO);
		free(roomy);
	}
	/*
	 * Overlapping the per-CPU array, whose bytes there happen to read as a valid extension
	 * header (per_cpu[0].last_interrupt_vtime = sizes 64 and 32): only the overlap is wrong.
	 */
	reset(f);
	H(f)->per_cpu[0].last_interrupt_vtime =
	    sizeof(struct barrierd_ext) | (uint64_t)sizeof(struct barrierd_ext_cpu) << 32;
	H(f)->ext_offset = sizeof(struct barrierd_header);
	assert_int_equal(try_img(f), -EPROTO);
	/* The extension's own sizes are part of the ABI too. */
	reset(f);
	X(f)->ext_header_size = sizeof(struct barrierd_ext) / 2;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	X(f)->ext_header_size = sizeof(struct barrierd_ext) * 2;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	X(f)->ext_cpu_stride = sizeof(struct barrierd_ext_cpu) / 2;
	assert_int_equal(try_img(f), -EPROTO);
	reset(f);
	X(f)->ext_cpu_stride = sizeof(struct barrierd_ext_cpu) * 2;
	assert_int_equal(try_img(f), -EPROTO);
	/* Without the feature flag the offset means nothing and is not looked at. */
	reset(f);
	H(f)->flags &= ~(BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL);
	H(f)->ext_offset = UINT64_MAX;
	assert_int_equal(try_img(f), 0);
}

/* Any time field later than our clock can only come from another boot: -ESTALE. */
static void future_times_refused(void **state)
{
	struct fx *f = *state;
	const uint64_t later = bd_mono_ns() + 3600 * TEST_SEC;

	H(f)->last_interrupt_ns = later;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	H(f)->per_cpu[0].last_interrupt_ns = later;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	/* The last CPU too: a reader that stops one short would miss it. */
	H(f)->per_cpu[NCPU - 1].last_interrupt_ns = later;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	H(f)->heartbeat_ns = later;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	X(f)->last_advance_ns = later;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	/* Only a little later still counts: there is no slack. */
	H(f)->last_interrupt_ns = bd_mono_ns() + 2 * TEST_SEC;
	assert_int_equal(try_img(f), -ESTALE);
	reset(f);
	/* vtime is a counter, not a time: any value is possible within one boot. */
	H(f)->vtime = UINT64_MAX - 1;
	H(f)->per_cpu[1].last_interrupt_vtime = UINT64_MAX / 2;
	assert_int_equal(try_img(f), 0);
}

/*
 * The library must not compare boot ids: in a container with its own boot id a host daemon's
 * file would otherwise always be refused.  Sane times are what matters.
 */
static void foreign_boot_id_opens(void **state)
{
	struct fx *f = *state;
	uint8_t mine[16];

	test_boot_id(mine);
	for (int i = 0; i < 16; i++)
		H(f)->boot_id[i] = (uint8_t)(mine[i] ^ 0x5a);
	assert_int_equal(try_img(f), 0);
	memset(H(f)->boot_id, 0, 16);
	assert_int_equal(try_img(f), 0);
	memset(H(f)->boot_id, 0xff, 16);
	assert_int_equal(try_img(f), 0);
}

/* A file the daemon reset (stopped, times zeroed) is valid: it opens, it only cannot pass. */
static void reset_file_opens(void **state)
{
	struct fx *f = *state;
	struct barrierd *b = NULL;

	H(f)->flags = BARRIERD_FLAG_STOPPED | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL;
	H(f)->last_interrupt_ns = 0;
	H(f)->heartbeat_ns = 0;
	X(f)->last_advance_ns = 0;
	for (int c = 0; c < NCPU; c++)
		H(f)->per_cpu[c].last_interrupt_ns = 0;
	assert_int_equal(test_write_file(f->path, f->img, f->size, 0644), 0);
	assert_int_equal(fake_open_lib(&b, f->path, NULL), 0);
	assert_false(barrierd_passed(b, barrierd_stamp_ns(b)));
	assert_int_equal(barrierd_wait(b, barrierd_stamp_ns(b), 0), -ESTALE);
	barrierd_close(b);
}

/*
 * Robustness: flip every bit of the header and the extension header, one at a time.  Each
 * file must be refused cleanly or accepted, and an accepted handle must be usable (a passed()
 * and a zero-timeout wait).  A crash fails the test binary.
 */
static void bit_flips_never_crash(void **state)
{
	struct fx *f = *state;
	const size_t xo = barrierd_ext_offset(NCPU);
	unsigned accepted = 0, refused = 0;

	for (size_t byte = 0; byte < xo + sizeof(struct barrierd_ext); byte++) {
		if (byte >= sizeof(struct barrierd_header) && byte < xo)
			continue; /* per-CPU values: any value is well-formed */
		for (int bit = 0; bit < 8; bit++) {
			struct barrierd *b = NULL;
			int ret;

			reset(f);
			((uint8_t *)f->img)[byte] ^= (uint8_t)(1u << bit);
			assert_int_equal(test_write_file(f->path, f->img, f->size, 0644), 0);
			ret = fake_open_lib(&b, f->path, NULL);
			if (ret == 0) {
				uint64_t s = barrierd_stamp_ns(b);

				(void)barrierd_passed(b, s);
				ret = barrierd_wait(b, s, 0);
				if (ret != 0 && ret != -ETIMEDOUT && ret != -ESTALE)
					fail_msg("byte %zu bit %d: wait returned %d", byte, bit,
						 ret);
				barrierd_close(b);
				accepted++;
			} else {
				if (ret != -EPROTO && ret != -ESTALE)
					fail_msg("byte %zu bit %d: open returned %d", byte, bit,
						 ret);
				refused++;
			}
		}
	}
	/* Both outcomes occur: the magic alone refuses 64 flips, reserved-ish bits accept. */
	assert_true(refused >= 64);
	assert_true(accepted > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(valid_file_opens, setup, teardown),
	    cmocka_unit_test_setup_teardown(open_bad_arguments, setup, teardown),
	    cmocka_unit_test_setup_teardown(truncated_below_header, setup, teardown),
	    cmocka_unit_test_setup_teardown(truncated_every_size, setup, teardown),
	    cmocka_unit_test_setup_teardown(truncated_per_cpu_array, setup, teardown),
	    cmocka_unit_test_setup_teardown(wrong_magic, setup, teardown),
	    cmocka_unit_test_setup_teardown(abi_versions, setup, teardown),
	    cmocka_unit_test_setup_teardown(wrong_header_size, setup, teardown),
	    cmocka_unit_test_setup_teardown(wrong_cpu_stride, setup, teardown),
	    cmocka_unit_test_setup_teardown(ncpu_zero, setup, teardown),
	    cmocka_unit_test_setup_teardown(ncpu_huge, setup, teardown),
	    cmocka_unit_test_setup_teardown(extension_out_of_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(future_times_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(foreign_boot_id_opens, setup, teardown),
	    cmocka_unit_test_setup_teardown(reset_file_opens, setup, teardown),
	    cmocka_unit_test_setup_teardown(bit_flips_never_crash, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
