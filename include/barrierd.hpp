/* SPDX-License-Identifier: MIT */
/*
 * barrierd.hpp - a header-only C++11 binding of libbarrierd (C++11, 14, 17 and 20).
 *
 * Namespace barrierd_cpp: the C API's `struct barrierd` already owns the name `barrierd` in the
 * global namespace, and C++ allows no namespace of the same name beside it.  Write
 * `namespace bd = barrierd_cpp;` for short.
 *
 *   barrierd_cpp::handle h = barrierd_cpp::handle::open();  // $BARRIERD_STATE or the default
 *   if (!h.barrier(std::chrono::seconds(1)))                  // false: timed out
 *           ...;
 *
 * Errors are std::system_error with std::generic_category() and the errno the C function
 * returned (compare e.code() with std::errc::...); what() names the C function.  A timeout is
 * an expected outcome, not an error: the waits that take a deadline return bool (false: timed
 * out).  Durations of any std::chrono type are accepted; zero or negative ones check once
 * without sleeping (the C API's timeout 0), and barrierd_cpp::forever (or any duration of
 * 2^63 ns, about 292 years, or more) means no deadline, as the overloads without a duration do.
 *
 * Thread safety and fork are as in barrierd.h: every member of a handle may be called from any
 * number of threads at once, except destruction, reset(), release() and assignment, which
 * close it.  A forked child may go on using its parent's handles (it fetches its own slots);
 * a child made without fork() (raw clone(), _Fork()) must open new ones.  Stamps must come
 * from stamp(), never from a plain clock reading (docs/CLIENT.md).  libbarrierd links as
 * for C: c++ app.cc $(pkg-config --cflags --libs barrierd)
 */
#ifndef BARRIERD_HPP
#define BARRIERD_HPP

#include <barrierd.h>
#include <barrierd_ec.h>
#include <barrierd_reclaim.h>

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>

#if __cplusplus >= 201703L
#define BARRIERD_NODISCARD [[nodiscard]]
#else
#define BARRIERD_NODISCARD
#endif

namespace barrierd_cpp
{

/** No deadline, for the waits that take a duration. */
constexpr std::chrono::nanoseconds forever = std::chrono::nanoseconds::max();

namespace detail
{

/* A duration as the C API's timeout_ns: saturating, never an overflow (any Rep, any Period). */
template <class Rep, class Period>
inline std::int64_t timeout_ns(const std::chrono::duration<Rep, Period> &d) noexcept
{
	typedef std::chrono::duration<long double, std::nano> fns;
	const long double ns = std::chrono::duration_cast<fns>(d).count();
	const std::int64_t max = std::numeric_limits<std::int64_t>::max();

	if (!(ns > 0)) /* zero, negative, NaN: check once */
		return 0;
	if (ns >= static_cast<long double>(max))
		return -1; /* the C API's "no deadline" */
	return static_cast<std::int64_t>(ns);
}

[[noreturn]] inline void throw_errno(int err, const char *what)
{
	throw std::system_error(-err, std::generic_category(), what);
}

/* 0: true; -ETIMEDOUT: false; any other error: thrown. */
inline bool passed_or_timed_out(int err, const char *what)
{
	if (err == 0)
		return true;
	if (err != -ETIMEDOUT)
		throw_errno(err, what);
	return false;
}

} // namespace detail

/** barrierd_open_opts() in C++ terms; the defaults are barrierd_open()'s. */
struct open_options {
	/** BARRIERD_OPEN_ATTACH_LATER, BARRIERD_OPEN_NO_DIRECT. */
	unsigned flags = 0;
	/** Finish a wait with membarrier(MEMBARRIER_CMD_GLOBAL) (BARRIERD_FALLBACK_MEMBARRIER). */
	bool fallback_membarrier = false;
	/** How long a wait goes on before it falls back; zero: the library's 100 ms. */
	std::chrono::nanoseconds fallback_after = std::chrono::nanoseconds::zero();
	/** Trust a state file owned by trusted_uid besides root. */
	bool trust_uid = false;
	uid_t trusted_uid = 0;
};

/**
 * An open state file: barrierd_open() in the constructor, barrierd_close() in the destructor.
 * Move-only.  An empty handle (default-constructed, moved from, reset or released) holds
 * nothing: its waits throw std::errc::invalid_argument, passed(), live() and direct() are
 * false, and stamp() returns UINT64_MAX, which no barrier passes.
 */
class handle
{
      public:
	/** An empty handle. */
	handle() noexcept : b_(nullptr)
	{
	}

	/**
	 * Open the state file at path (nullptr: $BARRIERD_STATE, then /run/barrierd/state).
	 * @throws std::system_error with barrierd_open_opts()'s errno (ENOENT, EPERM, EPROTO, ...).
	 */
	explicit handle(const char *path, const open_options &o = open_options()) : b_(nullptr)
	{
		struct barrierd_open_opts c = {}; /* the function's name hides the type's */

		c.sz = sizeof(c);
		c.flags = o.flags;
		c.fallback =
		    o.fallback_membarrier ? BARRIERD_FALLBACK_MEMBARRIER : BARRIERD_FALLBACK_NONE;
		c.fallback_after_ns = o.fallback_after.count();
		c.trusted_uid_set = o.trust_uid;
		c.trusted_uid = o.trusted_uid;
		int err = barrierd_open_opts(&b_, path, &c);
		if (err)
			detail::throw_errno(err, "barrierd_open");
	}

	explicit handle(const std::string &path, const open_options &o = open_options())
	    : handle(path.c_str(), o)
	{
	}

	/** Open the default state file ($BARRIERD_STATE, then /run/barrierd/state). */
	static handle open(const open_options &o = open_options())
	{
		return handle(static_cast<const char *>(nullptr), o);
	}

	/** Adopt a handle from barrierd_open(); the object closes it from now on. */
	static handle adopt(struct barrierd *b) noexcept
	{
		handle h;
		h.b_ = b;
		return h;
	}

	handle(const handle &) = delete;
	handle &operator=(const handle &) = delete;

	handle(handle &&o) noexcept : b_(o.b_)
	{
		o.b_ = nullptr;
	}

	/** Closes what this handle held, then takes o's. */
	handle &operator=(handle &&o) noexcept
	{
		if (this != &o) {
			barrierd_close(b_);
			b_ = o.b_;
			o.b_ = nullptr;
		}
		return *this;
	}

	~handle()
	{
		barrierd_close(b_);
	}

	/** Close now; the handle is empty after. */
	void reset() noexcept
	{
		barrierd_close(b_);
		b_ = nullptr;
	}

	/** Give up ownership: the caller closes the result with barrierd_close(). */
	BARRIERD_NODISCARD struct barrierd *release() noexcept
	{
		struct barrierd *b = b_;
		b_ = nullptr;
		return b;
	}

	/** The C handle, for the rest of the C API (vtime, mapping, observers, primitives). */
	struct barrierd *get() const noexcept
	{
		return b_;
	}

	explicit operator bool() const noexcept
	{
		return b_ != nullptr;
	}

	/**
	 * A barrier: every CPU has executed a serialising event after the call began, as with
	 * membarrier(MEMBARRIER_CMD_GLOBAL).
	 * @return true once passed, false if the timeout ran out first.
	 * @throws std::system_error for every other outcome (ESTALE: no live daemon; EIDRM; EINVAL;
	 * a fallback's error), as barrierd_barrier() returns it.
	 */
	template <class Rep, class Period>
	BARRIERD_NODISCARD bool barrier(const std::chrono::duration<Rep, Period> &timeout)
	{
		return detail::passed_or_timed_out(
		    barrierd_barrier(b_, detail::timeout_ns(timeout)), "barrierd_barrier");
	}

	/** A barrier without a deadline. @throws std::system_error as barrier(timeout). */
	void barrier()
	{
		int err = barrierd_barrier(b_, -1);
		if (err)
			detail::throw_errno(err, "barrierd_barrier");
	}

	/** barrierd_stamp_ns(): fenced; every store this thread made before it is visible. */
	std::uint64_t stamp() const noexcept
	{
		return b_ ? barrierd_stamp_ns(b_) : std::numeric_limits<std::uint64_t>::max();
	}

	/** Has every CPU passed the stamp?  A few loads, no system call, nobody asked. */
	bool passed(std::uint64_t stamp_ns) const noexcept
	{
		return b_ && barrierd_passed(b_, stamp_ns);
	}

	/**
	 * Wait until every CPU passed the stamp.
	 * @return true once passed, false if the timeout ran out first.
	 * @throws std::system_error as barrierd_wait() returns it (EINVAL: a stamp at or below
	 * the open, ESTALE, EIDRM, EPROTO, a fallback's error).
	 */
	template <class Rep, class Period>
	BARRIERD_NODISCARD bool wait(std::uint64_t stamp_ns,
				     const std::chrono::duration<Rep, Period> &timeout)
	{
		return detail::passed_or_timed_out(
		    barrierd_wait(b_, stamp_ns, detail::timeout_ns(timeout)), "barrierd_wait");
	}

	/** Wait without a deadline. @throws std::system_error as wait(stamp, timeout). */
	void wait(std::uint64_t stamp_ns)
	{
		int err = barrierd_wait(b_, stamp_ns, -1);
		if (err)
			detail::throw_errno(err, "barrierd_wait");
	}

	/**
	 * Wait for the CPUs in the set only: it covers only threads that can never run outside
	 * it (barrierd_wait_cpus()).  Returns and throws as wait().
	 */
	template <class Rep, class Period>
	BARRIERD_NODISCARD bool wait_cpus(std::uint64_t stamp_ns, const cpu_set_t &cpus,
					  const std::chrono::duration<Rep, Period> &timeout)
	{
		return detail::passed_or_timed_out(barrierd_wait_cpus(b_, stamp_ns, &cpus,
								      sizeof(cpus),
								      detail::timeout_ns(timeout)),
						   "barrierd_wait_cpus");
	}

	/** The same for a set of setsize bytes (CPU_ALLOC_SIZE()). */
	template <class Rep, class Period>
	BARRIERD_NODISCARD bool wait_cpus(std::uint64_t stamp_ns, const cpu_set_t *cpus,
					  std::size_t setsize,
					  const std::chrono::duration<Rep, Period> &timeout)
	{
		return detail::passed_or_timed_out(
		    barrierd_wait_cpus(b_, stamp_ns, cpus, setsize, detail::timeout_ns(timeout)),
		    "barrierd_wait_cpus");
	}

	/** Ring the doorbell without sleeping, for pollers of passed(). @throws as wait(). */
	void request()
	{
		int err = b_ ? barrierd_request(b_) : -EINVAL;
		if (err)
			detail::throw_errno(err, "barrierd_request");
	}

	/** Is a daemon publishing (running, heartbeat within three periods)? */
	bool live() const noexcept
	{
		return barrierd_live(b_);
	}

	/** Does the handle credit CPUs from the daemon's slots now (direct evidence)? */
	bool direct() const noexcept
	{
		return barrierd_direct(b_);
	}

      private:
	struct barrierd *b_;
};

/**
 * An event count (barrierd_ec.h).  Neither copied nor moved: waiters sleep on its address.
 * BARRIERD_EC_SHARED in flags for one in shared memory (placement new there).
 */
class event_count
{
      public:
	/** @throws std::system_error (EINVAL: unknown flags, value >= 2^63). */
	explicit event_count(std::uint64_t value = 0, unsigned flags = 0)
	{
		int err = barrierd_ec_init(&ec_, value, flags);
		if (err)
			detail::throw_errno(err, "barrierd_ec_init");
	}

	event_count(const event_count &) = delete;
	event_count &operator=(const event_count &) = delete;

	std::uint64_t value() const noexcept
	{
		return barrierd_ec_value(&ec_);
	}

	/** Any number of producers: one locked add (delta at most 2^62). */
	void add(std::uint64_t delta = 1) noexcept
	{
		barrierd_ec_add(&ec_, delta);
	}

	/**
	 * One producer only, and only with this form: one unlocked add (barrierd_ec_add_sp()).
	 */
	void add_sp(std::uint64_t delta = 1) noexcept
	{
		barrierd_ec_add_sp(&ec_, delta);
	}

	/**
	 * Wait until the value differs from old_value.  h may be empty: ck_ec's conservative
	 * second then stands in for the barrier.
	 * @return true once it moved, false if the timeout ran out first.
	 * @throws std::system_error (EINVAL: old_value >= 2^63).
	 */
	template <class Rep, class Period>
	BARRIERD_NODISCARD bool wait(std::uint64_t old_value, const handle &h,
				     const std::chrono::duration<Rep, Period> &timeout)
	{
		return detail::passed_or_timed_out(
		    barrierd_ec_wait(&ec_, h.get(), old_value, detail::timeout_ns(timeout)),
		    "barrierd_ec_wait");
	}

	/** Wait without a deadline. @throws std::system_error as wait(old_value, h, timeout). */
	void wait(std::uint64_t old_value, const handle &h)
	{
		int err = barrierd_ec_wait(&ec_, h.get(), old_value, -1);
		if (err)
			detail::throw_errno(err, "barrierd_ec_wait");
	}

	/** The C event count, for barrierd_ec_wait_pred() and the like. */
	struct barrierd_ec *get() noexcept
	{
		return &ec_;
	}

      private:
	struct barrierd_ec ec_;
};

/**
 * An epoch read section (barrierd_reclaim.h): barrierd_epoch_enter() in the constructor,
 * barrierd_epoch_exit() in the destructor.  Sections do not nest on one record, and a signal
 * handler needs a record of its own.
 */
class epoch_read_guard
{
      public:
	explicit epoch_read_guard(struct barrierd_epoch_record &r) noexcept : r_(r)
	{
		barrierd_epoch_enter(&r_);
	}

	epoch_read_guard(const epoch_read_guard &) = delete;
	epoch_read_guard &operator=(const epoch_read_guard &) = delete;

	~epoch_read_guard()
	{
		barrierd_epoch_exit(&r_);
	}

      private:
	struct barrierd_epoch_record &r_;
};

} // namespace barrierd_cpp

#endif /* BARRIERD_HPP */
