// SPDX-License-Identifier: MIT
/* The state-file ABI: offsets of the original layout and of ours, and the size helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <barrierd.h>
#include <barrierd_slot.h>

static void original_layout_kept(void **state)
{
	(void)state;
	/* struct barrierd_mapped_data of the original: 4 words, 96 reserved bytes, 16-byte CPUs */
	assert_int_equal(offsetof(struct barrierd_header, ncpu), 0);
	assert_int_equal(offsetof(struct barrierd_header, vtime), 8);
	assert_int_equal(offsetof(struct barrierd_header, last_interrupt_ns), 16);
	assert_int_equal(offsetof(struct barrierd_header, last_interrupt_vtime), 24);
	assert_int_equal(offsetof(struct barrierd_header, per_cpu), 128);
	assert_int_equal(sizeof(struct barrierd_cpu), 16);
	assert_int_equal(offsetof(struct barrierd_cpu, last_interrupt_vtime), 8);
}

static void reserved_area_fields(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct barrierd_header, magic), 32);
	assert_int_equal(offsetof(struct barrierd_header, flags), 56);
	assert_int_equal(offsetof(struct barrierd_header, generation), 64);
	assert_int_equal(offsetof(struct barrierd_header, heartbeat_ns), 72);
	assert_int_equal(offsetof(struct barrierd_header, heartbeat_period_ns), 80);
	assert_int_equal(offsetof(struct barrierd_header, daemon_pid), 88);
	assert_int_equal(offsetof(struct barrierd_header, boot_id), 96);
	assert_int_equal(offsetof(struct barrierd_header, doorbell), 112);
	assert_int_equal(offsetof(struct barrierd_header, ext_offset), 120);
	/* every futex word is 8-byte aligned, so its low half is its first 4 bytes */
	assert_int_equal(offsetof(struct barrierd_header, doorbell) % 8, 0);
	/* "BARRIERD" in file byte order */
	uint64_t m = BARRIERD_MAGIC;
	assert_memory_equal(&m, "BARRIERD", 8);
}

static void extension_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct barrierd_ext), 128);
	assert_int_equal(offsetof(struct barrierd_ext, stop_ns), 56);
	assert_int_equal(offsetof(struct barrierd_ext, stop_vtime), 64);
	assert_int_equal(offsetof(struct barrierd_ext, nudges), 80);
	assert_int_equal(sizeof(struct barrierd_ext_cpu), 32);
	for (uint64_t n = 1; n <= 4096; n = n * 2 + 1) {
		uint64_t xo = barrierd_ext_offset(n);

		assert_true(xo % 64 == 0);
		assert_true(xo >= 128 + 16 * n);
		assert_true(xo < 128 + 16 * n + 64);
		assert_int_equal(barrierd_cpu_flags_offset(n), xo + 128 + 32 * n);
		assert_int_equal(barrierd_file_size(n), xo + 128 + 32 * n + 8 * n);
	}
}

static void slot_is_one_line(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct barrierd_slot), 64);
	assert_int_equal(offsetof(struct barrierd_slot, stamp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(original_layout_kept),
	    cmocka_unit_test(reserved_area_fields),
	    cmocka_unit_test(extension_layout),
	    cmocka_unit_test(slot_is_one_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
