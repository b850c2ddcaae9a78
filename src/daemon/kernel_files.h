/* SPDX-License-Identifier: MIT */
/* Small text files the kernel publishes (sysfs, procfs, tracefs), read at start-up. */
#ifndef BARRIERD_KERNEL_FILES_H
#define BARRIERD_KERNEL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Read a small file whole, with one read(), into buf (size bytes, NUL-terminated).  Its length
 * (at least 1), -errno when it cannot be opened, or -EIO when nothing could be read.
 */
ssize_t read_text_file(const char *path, char *buf, size_t size);

/*
 * Highest possible CPU id + 1 (/sys/devices/system/cpu/possible), not the count: CPU ids index
 * the slots and the file, and a hole in the mask is a CPU that is never online.  -errno.
 */
int possible_cpus(void);

/*
 * A CPU list file ("2-3,5\n", or empty) into in[0..n): true for each CPU listed.  The number
 * listed below n; 0 when the file does not exist (no such feature: an empty list); -errno or
 * -EIO (unreadable, or not a list).
 */
int cpu_list_read(const char *path, bool *in, unsigned long n);

#endif
