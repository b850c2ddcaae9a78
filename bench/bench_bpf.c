// SPDX-License-Identifier: MIT
/*
 * bench_bpf: the baseline programs' loader, and a reader of the daemon's programs' statistics.
 *
 *   bench_bpf attach stamp|xchg|empty CAT/NAME SECONDS
 *       Load bench/baseline.bpf.c, attach the one program to the raw tracepoint, and after
 *       SECONDS print "PROG TP run_cnt run_time_ns seconds" (the deltas over the window; the
 *       counters move only while kernel.bpf_stats_enabled is 1).  SECONDS 0: print "attached",
 *       hold until SIGTERM or SIGINT, then print the line.
 *   bench_bpf stats PID
 *       For every BPF program PID holds a descriptor of: "name id run_cnt run_time_ns".
 *       (/proc/PID/fdinfo gives the id, BPF_OBJ_GET_INFO_BY_FD the name and counters.)
 *   bench_bpf slots PID
 *       The statistics counters of the daemon's slot array, one line per CPU:
 *       "cpu C switches S events E signals G" (signals: ring-buffer wake-ups sent).
 */
#include "bench_common.h"

#include "bench_baseline.skel.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <signal.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int prog_info(int fd, struct bpf_prog_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

static int cmd_attach(const char *which, const char *tp, double secs)
{
	struct bench_baseline_bpf *skel;
	struct bpf_program *prog;
	struct bpf_link *link;
	struct bpf_prog_info a, b;
	const char *name = strchr(tp, '/') ? strchr(tp, '/') + 1 : tp;
	uint64_t t0, t1;
	int ncpu = libbpf_num_possible_cpus();

	skel = bench_baseline_bpf__open();
	if (!skel || ncpu <= 0)
		return 1;
	if (bpf_map__set_max_entries(skel->maps.slots, (__u32)ncpu))
		return 1;
	if (!strcmp(which, "stamp")) {
		prog = skel->progs.baseline_stamp;
	} else if (!strcmp(which, "xchg")) {
		prog = skel->progs.baseline_xchg;
	} else if (!strcmp(which, "empty")) {
		prog = skel->progs.baseline_empty;
	} else {
		fprintf(stderr, "bench_bpf: unknown program '%s' (stamp, xchg or empty)\n", which);
		return 64;
	}
	/* Only the chosen program is loaded: never two in the kernel at once. */
	bpf_program__set_autoload(skel->progs.baseline_stamp, prog == skel->progs.baseline_stamp);
	bpf_program__set_autoload(skel->progs.baseline_xchg, prog == skel->progs.baseline_xchg);
	bpf_program__set_autoload(skel->progs.baseline_empty, prog == skel->progs.baseline_empty);
	if (bench_baseline_bpf__load(skel)) {
		fprintf(stderr, "bench_bpf: cannot load the baseline: %s\n", strerror(errno));
		return 1;
	}
	link = bpf_program__attach_raw_tracepoint(prog, name);
	if (!link) {
		fprintf(stderr, "bench_bpf: cannot attach to %s: %s\n", name, strerror(errno));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	prog_info(bpf_program__fd(prog), &a);
	t0 = bd_mono_ns();
	if (secs > 0) {
		bench_sleep_ns((uint64_t)(secs * 1e9));
	} else {
		printf("attached\n");
		fflush(stdout);
		while (!stop)
			pause();
	}
	prog_info(bpf_program__fd(prog), &b);
	t1 = bd_mono_ns();
	bpf_link__destroy(link);
	printf("baseline_%s %s %llu %llu %.3f\n", which, tp,
	       (unsigned long long)(b.run_cnt - a.run_cnt),
	       (unsigned long long)(b.run_time_ns - a.run_time_ns), (double)(t1 - t0) / 1e9);
	bench_baseline_bpf__destroy(skel);
	return 0;
}

/*
 * Call fn for each BPF object of `kind` ("prog" or "map") that PID holds a descriptor of,
 * by the ids in /proc/PID/fdinfo (`KIND_type:` marks one, `KIND_id:` is its id), until fn
 * returns nonzero.  Returns 1 if /proc/PID/fdinfo cannot be read, else 0.
 */
static int for_each_bpf_id(const char *pid, const char *kind, int (*fn)(unsigned id, void *arg),
			   void *arg)
{
	char dir[64], path[384], line[256], type_key[16], id_key[16];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%s/fdinfo", pid);
	snprintf(type_key, sizeof(type_key), "%s_type:", kind);
	snprintf(id_key, sizeof(id_key), "%s_id:", kind);
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "bench_bpf: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		unsigned id = 0;
		int is_kind = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			is_kind |= !strncmp(line, type_key, strlen(type_key));
			if (!strncmp(line, id_key, strlen(id_key)))
				id = (unsigned)strtoul(line + strlen(id_key), NULL, 10);
		}
		fclose(f);
		if (is_kind && id && fn(id, arg))
			break;
	}
	closedir(d);
	return 0;
}

struct seen_ids {
	unsigned id[256];
	int n;
};

/* One line per program (each once: a process may hold several descriptors of one). */
static int print_prog(unsigned id, void *arg)
{
	struct seen_ids *seen = arg;
	struct bpf_prog_info info;
	int fd;

	for (int i = 0; i < seen->n; i++)
		if (seen->id[i] == id)
			return 0;
	if (seen->n == 256)
		return 1;
	seen->id[seen->n++] = id;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return 0;
	if (prog_info(fd, &info) == 0)
		printf("%s %u %llu %llu\n", info.name, id, (unsigned long long)info.run_cnt,
		       (unsigned long long)info.run_time_ns);
	close(fd);
	return 0;
}

static int cmd_stats(const char *pid)
{
	struct seen_ids seen = {.n = 0};

	return for_each_bpf_id(pid, "prog", print_prog, &seen);
}

/* If map id is the slot array (named "slots", 64-byte values), print its per-CPU counters. */
static int print_slots(unsigned id, void *arg)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int found = 0, fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return 0;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && !strcmp(info.name, "slots") &&
	    info.value_size == 64) {
		found = 1;
		for (__u32 c = 0; c < info.max_entries; c++) {
			__u64 v[8];

			if (bpf_map_lookup_elem(fd, &c, v))
				continue;
			/* struct barrierd_slot: stamp vtime idle switches events signals ... */
			printf("cpu %u switches %llu events %llu signals %llu\n", c,
			       (unsigned long long)v[3], (unsigned long long)v[4],
			       (unsigned long long)v[5]);
		}
	}
	close(fd);
	*(int *)arg |= found;
	return found;
}

/* The per-CPU counters of PID's slot array. */
static int cmd_slots(const char *pid)
{
	int found = 0;

	if (for_each_bpf_id(pid, "map", print_slots, &found))
		return 1;
	if (!found)
		fprintf(stderr, "bench_bpf: process %s holds no slot array\n", pid);
	return found ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "attach"))
		return cmd_attach(argv[2], argv[3], atof(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "stats"))
		return cmd_stats(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "slots"))
		return cmd_slots(argv[2]);
	fprintf(
	    stderr,
	    "usage: bench_bpf attach stamp|xchg|empty CAT/NAME SECONDS | stats PID | slots PID\n");
	return 64;
}
