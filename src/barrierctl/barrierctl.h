/* SPDX-License-Identifier: MIT */
/*
 * barrierctl - the command-line tool of barrierd: status, watch, wait, bench and metrics.
 *
 * One file per command (status.c, watch.c, wait.c, bench.c, metrics.c), each calling only the
 * shared pieces in common.c, which this header declares; main.c parses the command line and
 * dispatches.  Everything reads the state file through libbarrierd: barrierd_open() does the
 * trust and structure checks and barrierd_mapping() gives the validated read-only mapping.
 */
#ifndef BARRIERCTL_H
#define BARRIERCTL_H

#include <barrierd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit codes: docs/barrierctl.8 and the --help text list them; scripts depend on them. */
#define BCTL_EXIT_OK 0
#define BCTL_EXIT_DEGRADED 1 /* status/watch: a busy CPU lags; wait/bench: a failure */
#define BCTL_EXIT_FAILED 1
#define BCTL_EXIT_TIMEOUT 2	/* wait: no barrier within --timeout */
#define BCTL_EXIT_NOT_RUNNING 3 /* no daemon publishes: stopped flag, no running flag, stale */
#define BCTL_EXIT_UNUSABLE 4	/* the state file cannot be opened, validated or trusted */
#define BCTL_EXIT_USAGE 64	/* EX_USAGE */

/* status --json: the version of its shape (docs/status.schema.json); bumped on a breaking change.
 */
#define BCTL_JSON_SCHEMA_VERSION 1

#define BCTL_MS 1000000ULL
#define BCTL_SEC 1000000000ULL

/* The command line, parsed by main.c. */
struct bctl_opts {
	const char *state; /* NULL: $BARRIERD_STATE, then the default path (as libbarrierd) */
	bool trusted_uid_set;
	uid_t trusted_uid;
	bool json;
	uint64_t lag_threshold_ns;
	int64_t timeout_ns;
	uint64_t interval_ns;
	uint64_t count; /* watch: 0 = until a signal */
	uint64_t rounds;
	unsigned methods; /* bench: bit per enum barrier_method (barrier_method.h); 0 = default */
	bool load;
	uint64_t gap_ns; /* bench: the longest random sleep before a call; 0 = back to back */
	const char *csv;
	int cpu;	    /* bench: the calling thread's CPU; -1 = the one it starts on */
	const char *output; /* metrics: write this file (atomically) instead of stdout */
};

/* ---- signals (common.c) ---- */

/* Set by the SIGINT/SIGTERM handler: the signal number that asked us to stop. */
extern volatile sig_atomic_t bctl_stop_signal;
/* Install that handler for SIGINT and SIGTERM (without SA_RESTART).  0 or -errno. */
int bctl_catch_stop_signals(void);

/* ---- the state file (common.c) ---- */

/* The state path barrierd_open() will use, for messages. */
const char *bctl_state_path(const struct bctl_opts *o);
/* barrierd_open_opts() with the trusted uid from the command line.  0 or -errno. */
int bctl_open(const struct bctl_opts *o, struct barrierd **b);
/* The same with BARRIERD_OPEN_* flags (bench's file method: BARRIERD_OPEN_NO_DIRECT). */
int bctl_open_flags(const struct bctl_opts *o, struct barrierd **b, unsigned flags);
/* One line (no newline) saying why barrierd_open() refused the file. */
const char *bctl_open_error(int err);

/* ---- snapshots (common.c) ---- */

struct bctl_cpu {
	uint64_t ns, vtime;
	uint64_t state; /* enum barrierd_cpu_state; UNKNOWN without an extension */
	uint64_t credit_event, credit_idle, credit_offline;
	uint64_t flags; /* BARRIERD_CPUF_*, with has_cpu_flags */
};

enum bctl_health {
	BCTL_HEALTHY,
	BCTL_DEGRADED,
	BCTL_STOPPED, /* stopped flag set, or the running flag clear */
	BCTL_STALE,   /* running flag set, but no heartbeat within 3 periods */
};

/* Every field the status shows, loaded once so that text and JSON agree with each other. */
struct bctl_snapshot {
	const char *path;
	uint64_t now_ns; /* host CLOCK_MONOTONIC, read after every load below */
	uint64_t ncpu, vtime, last_ns, last_vtime;
	uint64_t freshest_ns; /* the largest per-CPU last_interrupt_ns */
	uint32_t abi_major, abi_minor;
	uint64_t flags, generation, heartbeat_ns, heartbeat_period_ns, daemon_pid;
	uint8_t boot_id[16];
	bool has_ext;
	uint64_t last_advance_ns, last_advance_cause, passes, credit_passes, doorbell_rings;
	uint64_t served_ns;   /* 0: none published (ABI 1.0, or no ring yet) */
	uint64_t nudges;      /* 0 from a daemon without nudges */
	bool has_cpu_flags;   /* BARRIERD_FEAT_CPU_FLAGS, within the mapping */
	struct bctl_cpu *cpu; /* ncpu entries */
};

/* Load every field of an open file once, the clock last.  0 (free *s) or -errno. */
int bctl_snapshot_take(struct barrierd *b, const char *path, struct bctl_snapshot *s);
void bctl_snapshot_free(struct bctl_snapshot *s);
/*
 * For status, watch and metrics: open the file, ask a live daemon for a fresh pass, snapshot,
 * close.  0 with *s to free, or -errno, reported on stderr as "barrierctl: CMD: ..." and, when
 * why is not NULL, put there without the prefix.
 */
int bctl_snapshot_fresh(const struct bctl_opts *o, const char *cmd, struct bctl_snapshot *s,
			char *why, size_t whylen);

/* Now - t, never negative: an age on the snapshot's clock. */
static inline uint64_t bctl_age(const struct bctl_snapshot *s, uint64_t t)
{
	return s->now_ns > t ? s->now_ns - t : 0;
}

static inline double bctl_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* ---- judging a snapshot (common.c) ---- */

/* The heartbeat period the liveness check uses (lib/liveness.c's substitute for nonsense). */
uint64_t bctl_effective_period(const struct bctl_snapshot *s);
enum bctl_health bctl_daemon_health(const struct bctl_snapshot *s);
/* How far the CPU's value is behind the freshest per-CPU value: what "lagging" judges. */
uint64_t bctl_behind_ns(const struct bctl_snapshot *s, uint64_t cpu);
/* How far the CPU's vtime is behind the global vtime. */
uint64_t bctl_vtime_lag(const struct bctl_snapshot *s, uint64_t cpu);
bool bctl_cpu_lagging(const struct bctl_snapshot *s, uint64_t cpu, uint64_t threshold_ns);
uint64_t bctl_lagging_count(const struct bctl_snapshot *s, uint64_t threshold_ns);
enum bctl_health bctl_health(const struct bctl_snapshot *s, uint64_t threshold_ns);
int bctl_health_exit_code(enum bctl_health h);

/* ---- names and formats shared by the commands (common.c) ---- */

const char *bctl_health_name(enum bctl_health h);
const char *bctl_state_name(uint64_t state);
/* The boot id in its /proc form, 8-4-4-4-12 hex digits. */
void bctl_format_boot_id(const uint8_t id[16], char out[37]);
/* The status table: what status prints without --json and what watch refreshes. */
void bctl_render_text(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns);

/* ---- the commands: each returns the process's exit code ---- */

int bctl_cmd_status(const struct bctl_opts *o);	 /* status.c */
int bctl_cmd_watch(const struct bctl_opts *o);	 /* watch.c */
int bctl_cmd_wait(const struct bctl_opts *o);	 /* wait.c */
int bctl_cmd_bench(const struct bctl_opts *o);	 /* bench.c */
int bctl_cmd_metrics(const struct bctl_opts *o); /* metrics.c */

#endif
