// SPDX-License-Identifier: MIT
/*
 * barrierctl status: one fresh snapshot of the state file, judged and printed as the table
 * (common.c, shared with watch) or as one JSON object (--json, here; docs/status.schema.json
 * describes it, and the object printed instead when the file cannot be used), and the health
 * as the exit code.
 */
#include "barrierctl.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

static const char *cause_name(uint64_t cause)
{
	switch (BARRIERD_CAUSE_KIND(cause)) {
	case BARRIERD_CAUSE_NONE:
		return "none";
	case BARRIERD_CAUSE_EVENT:
		return "event";
	case BARRIERD_CAUSE_IDLE:
		return "idle";
	case BARRIERD_CAUSE_OFFLINE:
		return "offline";
	default:
		return "unknown";
	}
}

static void json_string(FILE *f, const char *str)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static const char *jbool(bool b)
{
	return b ? "true" : "false";
}

/* The fields and their order are documented in docs/barrierctl.8 and listed by --help. */
static void render_json(FILE *f, const struct bctl_snapshot *s, uint64_t threshold_ns)
{
	enum bctl_health h = bctl_health(s, threshold_ns);
	char boot[37];

	fprintf(f, "{\n  \"schema_version\": %d,\n  \"path\": ", BCTL_JSON_SCHEMA_VERSION);
	json_string(f, s->path);
	fprintf(f, ",\n  \"health\": \"%s\",\n  \"exit_code\": %d,\n", bctl_health_name(h),
		bctl_health_exit_code(h));
	fprintf(f, "  \"now_ns\": %llu,\n  \"lag_threshold_ms\": %.3f,\n",
		(unsigned long long)s->now_ns, bctl_ms(threshold_ns));
	fprintf(f, "  \"abi_major\": %u,\n  \"abi_minor\": %u,\n  \"ncpu\": %llu,\n", s->abi_major,
		s->abi_minor, (unsigned long long)s->ncpu);
	fprintf(f, "  \"vtime\": %llu,\n  \"last_interrupt_ns\": %llu,\n",
		(unsigned long long)s->vtime, (unsigned long long)s->last_ns);
	fprintf(f, "  \"last_interrupt_age_ms\": %.3f,\n  \"last_interrupt_vtime\": %llu,\n",
		bctl_ms(bctl_age(s, s->last_ns)), (unsigned long long)s->last_vtime);
	bctl_format_boot_id(s->boot_id, boot);
	fprintf(f, "  \"flags\": %llu,\n  \"boot_id\": \"%s\",\n", (unsigned long long)s->flags,
		boot);

	fprintf(f,
		"  \"daemon\": {\n    \"live\": %s,\n    \"running\": %s,\n    \"stopped\": %s,\n",
		jbool(bctl_daemon_health(s) == BCTL_HEALTHY),
		jbool(s->flags & BARRIERD_FLAG_RUNNING), jbool(s->flags & BARRIERD_FLAG_STOPPED));
	fprintf(f, "    \"armed\": %s,\n", jbool(s->flags & BARRIERD_FLAG_ARMED));
	fprintf(f, "    \"pid\": %llu,\n    \"generation\": %llu,\n    \"heartbeat_ns\": %llu,\n",
		(unsigned long long)s->daemon_pid, (unsigned long long)s->generation,
		(unsigned long long)s->heartbeat_ns);
	fprintf(f, "    \"heartbeat_age_ms\": %.3f,\n    \"heartbeat_period_ms\": %.3f\n  },\n",
		bctl_ms(bctl_age(s, s->heartbeat_ns)), bctl_ms(bctl_effective_period(s)));

	if (s->has_ext && s->last_advance_ns) {
		fprintf(f,
			"  \"last_advance\": {\n    \"ns\": %llu,\n    \"age_ms\": %.3f,\n"
			"    \"cause\": \"%s\",\n    \"cpu\": %u\n  },\n",
			(unsigned long long)s->last_advance_ns,
			bctl_ms(bctl_age(s, s->last_advance_ns)), cause_name(s->last_advance_cause),
			BARRIERD_CAUSE_CPU(s->last_advance_cause));
	} else {
		fprintf(f, "  \"last_advance\": null,\n");
	}
	if (s->has_ext)
		fprintf(f,
			"  \"passes\": %llu,\n  \"credit_passes\": %llu,\n  \"doorbell_rings\": "
			"%llu,\n  \"nudges\": %llu,\n",
			(unsigned long long)s->passes, (unsigned long long)s->credit_passes,
			(unsigned long long)s->doorbell_rings, (unsigned long long)s->nudges);
	else
		fprintf(f, "  \"passes\": null,\n  \"credit_passes\": null,\n  \"doorbell_rings\": "
			   "null,\n  \"nudges\": null,\n");
	fprintf(f, "  \"lagging_cpus\": %llu,\n  \"cpus\": [",
		(unsigned long long)bctl_lagging_count(s, threshold_ns));
	for (uint64_t c = 0; c < s->ncpu; c++) {
		const struct bctl_cpu *pc = &s->cpu[c];

		fprintf(f, "%s\n    {\"cpu\": %llu, \"state\": \"%s\", \"lagging\": %s, ",
			c ? "," : "", (unsigned long long)c, bctl_state_name(pc->state),
			jbool(bctl_cpu_lagging(s, c, threshold_ns)));
		fprintf(f, "\"last_interrupt_ns\": %llu, \"lag_ms\": %.3f, ",
			(unsigned long long)pc->ns, bctl_ms(bctl_age(s, pc->ns)));
		fprintf(f, "\"behind_ms\": %.3f, ", bctl_ms(bctl_behind_ns(s, c)));
		fprintf(f, "\"last_interrupt_vtime\": %llu, \"vtime_lag\": %llu, ",
			(unsigned long long)pc->vtime, (unsigned long long)bctl_vtime_lag(s, c));
		if (s->has_ext)
			fprintf(f,
				"\"credit_event\": %llu, \"credit_idle\": %llu, "
				"\"credit_offline\": %llu, ",
				(unsigned long long)pc->credit_event,
				(unsigned long long)pc->credit_idle,
				(unsigned long long)pc->credit_offline);
		else
			fprintf(f, "\"credit_event\": null, \"credit_idle\": null, "
				   "\"credit_offline\": null, ");
		if (s->has_cpu_flags)
			fprintf(f, "\"nohz_full\": %s, \"isolated\": %s, \"nudge\": %s}",
				jbool(pc->flags & BARRIERD_CPUF_NOHZ_FULL),
				jbool(pc->flags & BARRIERD_CPUF_ISOLATED),
				jbool(pc->flags & BARRIERD_CPUF_NUDGE));
		else
			fprintf(f, "\"nohz_full\": null, \"isolated\": null, \"nudge\": null}");
	}
	fprintf(f, "\n  ]\n}\n");
}

/* The object status --json prints when there is no file to show: the error and the code. */
static void render_json_error(FILE *f, const char *path, const char *why, int code)
{
	fprintf(f, "{\n  \"schema_version\": %d,\n  \"path\": ", BCTL_JSON_SCHEMA_VERSION);
	json_string(f, path);
	fprintf(f, ",\n  \"error\": ");
	json_string(f, why);
	fprintf(f, ",\n  \"exit_code\": %d\n}\n", code);
}

int bctl_cmd_status(const struct bctl_opts *o)
{
	struct bctl_snapshot s;
	char why[PATH_MAX + 256];
	int code;

	if (bctl_snapshot_fresh(o, "status", &s, why, sizeof(why))) {
		if (!o->json)
			return BCTL_EXIT_UNUSABLE;
		render_json_error(stdout, bctl_state_path(o), why, BCTL_EXIT_UNUSABLE);
		return fflush(stdout) ? BCTL_EXIT_FAILED : BCTL_EXIT_UNUSABLE;
	}
	if (o->json)
		render_json(stdout, &s, o->lag_threshold_ns);
	else
		bctl_render_text(stdout, &s, o->lag_threshold_ns);
	code = bctl_health_exit_code(bctl_health(&s, o->lag_threshold_ns));
	bctl_snapshot_free(&s);
	if (fflush(stdout)) {
		fprintf(stderr, "barrierctl: status: cannot write the output: %s\n",
			strerror(errno));
		return BCTL_EXIT_FAILED;
	}
	return code;
}
