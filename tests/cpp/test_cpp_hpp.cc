// SPDX-License-Identifier: MIT
/*
 * test_cpp_hpp STATE_PATH WORKDIR: include/barrierd.hpp against the real daemon serving
 * STATE_PATH (test_cpp_hpp.sh starts it): open, barriers with and without a deadline, waits, the
 * error mapping to std::errc, move semantics, the destructor's close, the event count and the
 * epoch read guard.  Built as C++11 by g++ and clang++; prints "N passed, N failed".
 */
#include <barrierd.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace bd = barrierd_cpp;
using std::chrono::milliseconds;
using std::chrono::seconds;

static unsigned passes, failures;

static void check(bool ok, const char *what, int line)
{
	if (ok) {
		passes++;
	} else {
		failures++;
		std::printf("FAIL (line %d): %s\n", line, what);
	}
}
#define CHECK(x) check((x), #x, __LINE__)

// The handle is move-only, and its moves cannot throw (containers move it).
static_assert(!std::is_copy_constructible<bd::handle>::value, "handle copies");
static_assert(!std::is_copy_assignable<bd::handle>::value, "handle copies");
static_assert(std::is_nothrow_move_constructible<bd::handle>::value, "handle move throws");
static_assert(std::is_nothrow_move_assignable<bd::handle>::value, "handle move throws");
static_assert(!std::is_move_constructible<bd::event_count>::value, "event count moves");

// The errno of the std::system_error that f throws, or 0 if it throws none.
template <class F> static std::error_code error_of(F f)
{
	try {
		f();
	} catch (const std::system_error &e) {
		if (e.code().category() != std::generic_category())
			return std::error_code(-1, e.code().category());
		return e.code();
	}
	return std::error_code();
}

// Descriptors open in this process.
static int count_fds()
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

// Is path mapped in this process?
static bool is_mapped(const std::string &path)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;

	while (std::getline(maps, line))
		if (line.size() >= path.size() &&
		    line.compare(line.size() - path.size(), path.size(), path) == 0)
			return true;
	return false;
}

static void test_durations()
{
	using bd::detail::timeout_ns;
	CHECK(timeout_ns(seconds(2)) == 2000000000);
	CHECK(timeout_ns(milliseconds(-5)) == 0); // check once, no wait
	CHECK(timeout_ns(std::chrono::nanoseconds(1)) == 1);
	CHECK(timeout_ns(std::chrono::duration<double>(0.25)) == 250000000);
	CHECK(timeout_ns(std::chrono::duration<double>(-1.0)) == 0);
	CHECK(timeout_ns(std::chrono::duration<long long, std::pico>(1500)) == 1);
	CHECK(timeout_ns(bd::forever) == -1); // the C API's no deadline
	CHECK(timeout_ns(std::chrono::hours::max()) == -1);
	CHECK(timeout_ns(std::chrono::hours(24 * 365 * 200)) ==
	      24LL * 365 * 200 * 3600 * 1000000000);
}

static void test_errors(const std::string &work)
{
	std::string missing = work + "/no/such/state";
	CHECK(error_of([&] { bd::handle h(missing); }) == std::errc::no_such_file_or_directory);

	// A root-owned 0644 file of zeros in a trusted directory: not a barrierd file.
	std::string junk = work + "/junk";
	{
		std::ofstream f(junk.c_str(), std::ios::binary);
		std::string zeros(4096, '\0');
		f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
	}
	chmod(junk.c_str(), 0644);
	CHECK(error_of([&] { bd::handle h(junk); }) == std::errc::protocol_error);

	bd::open_options bad;
	bad.flags = 0x80;
	CHECK(error_of([&] { bd::handle h(missing, bad); }) == std::errc::invalid_argument);

	// The message names the C function.
	try {
		bd::handle h(missing);
		CHECK(false); // no exception
	} catch (const std::system_error &e) {
		CHECK(std::strstr(e.what(), "barrierd_open") != nullptr);
	}
}

static void test_barriers(const std::string &state)
{
	bd::handle h(state);

	CHECK(static_cast<bool>(h));
	CHECK(h.live());
	CHECK(h.barrier(seconds(10)));
	CHECK(h.barrier(std::chrono::duration<double>(10.5)));
	CHECK(h.barrier(bd::forever));
	CHECK(h.barrier(std::chrono::hours::max())); // saturates: no deadline
	h.barrier();				     // no deadline
	// Zero checks once: passed or timed out, never an error.
	CHECK(error_of([&] { (void)h.barrier(std::chrono::nanoseconds(0)); }) == std::error_code());

	std::uint64_t t = h.stamp();
	CHECK(h.wait(t, seconds(10)));
	CHECK(h.passed(t));
	t = h.stamp();
	h.wait(t);
	CHECK(h.passed(t));

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(static_cast<unsigned>(sched_getcpu()), &set);
	t = h.stamp();
	CHECK(h.wait_cpus(t, set, seconds(10)));
	CHECK(h.wait_cpus(h.stamp(), &set, sizeof(set), seconds(10)));

	// Timed out is false, not an exception: a fresh stamp with no time to wait, on a handle
	// that waits on the file alone (the daemon cannot publish a pass after T within those
	// loads).
	bd::open_options file_only;
	file_only.flags = BARRIERD_OPEN_NO_DIRECT;
	bd::handle f(state, file_only);
	int timed_out = 0;
	for (int i = 0; i < 100 && !timed_out; i++)
		timed_out += !f.wait(f.stamp(), std::chrono::nanoseconds(0));
	CHECK(timed_out == 1);
	CHECK(!f.direct());

	// A stamp at or below the open is refused: EINVAL, thrown.
	CHECK(error_of([&] { (void)h.wait(1, seconds(1)); }) == std::errc::invalid_argument);
	CHECK(error_of([&] { h.request(); }) == std::error_code());
}

static void test_moves(const std::string &state)
{
	bd::handle a(state);
	struct barrierd *raw = a.get();
	bd::handle b(std::move(a));

	CHECK(!a && a.get() == nullptr);
	CHECK(b.get() == raw);
	CHECK(b.barrier(seconds(10)));
	// The moved-from handle is inert: its waits throw EINVAL, its queries say no.
	CHECK(error_of([&] { (void)a.barrier(seconds(1)); }) == std::errc::invalid_argument);
	CHECK(error_of([&] { a.barrier(); }) == std::errc::invalid_argument);
	CHECK(error_of([&] { (void)a.wait(5, seconds(1)); }) == std::errc::invalid_argument);
	CHECK(error_of([&] { a.request(); }) == std::errc::invalid_argument);
	CHECK(a.stamp() == UINT64_MAX && !a.passed(5) && !a.live() && !a.direct());

	bd::handle c;
	CHECK(!c);
	c = std::move(b);
	CHECK(!b && c.get() == raw && c.barrier(seconds(10)));
	bd::handle &alias = c;
	c = std::move(alias); // self-move keeps the handle
	CHECK(c.get() == raw);

	// release() hands the C handle over; adopt() takes one back.
	struct barrierd *r = c.release();
	CHECK(!c && r == raw);
	bd::handle d = bd::handle::adopt(r);
	CHECK(d.get() == raw && d.barrier(seconds(10)));
}

static void test_close(const std::string &state)
{
	int before = count_fds();

	CHECK(!is_mapped(state));
	{
		bd::handle h(state);
		CHECK(is_mapped(state));
		CHECK(h.barrier(seconds(10)));
	}
	CHECK(!is_mapped(state));
	CHECK(count_fds() == before);

	// Move-assigning over an open handle closes what it held.
	{
		bd::handle x(state), y(state);
		x = std::move(y);
		CHECK(x.barrier(seconds(10)));
		x.reset();
		CHECK(!x);
	}
	CHECK(!is_mapped(state));
	CHECK(count_fds() == before);

	// The default path comes from $BARRIERD_STATE.
	setenv(BARRIERD_STATE_ENV, state.c_str(), 1);
	{
		bd::handle h = bd::handle::open();
		CHECK(h.barrier(seconds(10)));
	}
	unsetenv(BARRIERD_STATE_ENV);
	CHECK(count_fds() == before);
}

static void test_event_count(const std::string &state)
{
	bd::handle h(state);
	bd::event_count ec(5);
	std::atomic<bool> go(false);

	CHECK(ec.value() == 5);
	std::thread producer([&] {
		while (!go.load())
			std::this_thread::yield();
		ec.add();
	});
	go.store(true);
	CHECK(ec.wait(5, h, seconds(10)));
	producer.join();
	CHECK(ec.value() == 6);
	CHECK(!ec.wait(6, h, milliseconds(20))); // nothing moves it: timed out
	CHECK(error_of([&] { bd::event_count bad(1ULL << 63); }) == std::errc::invalid_argument);
}

static void test_epoch_guard(const std::string &state)
{
	bd::handle h(state);
	struct barrierd_epoch *e = barrierd_epoch_new(h.get(), 0);
	struct barrierd_epoch_record *r = e ? barrierd_epoch_register(e) : nullptr;

	CHECK(r != nullptr);
	if (!r)
		return;
	{
		bd::epoch_read_guard g(*r);
		CHECK(__atomic_load_n(&r->active, __ATOMIC_RELAXED) != 0);
	}
	CHECK(__atomic_load_n(&r->active, __ATOMIC_RELAXED) == 0);
	CHECK(barrierd_epoch_synchronize(e, 10LL * 1000000000LL) == 0);
	barrierd_epoch_unregister(e, r);
	barrierd_epoch_free(e);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: test_cpp_hpp STATE_PATH WORKDIR\n");
		return 64;
	}
	const std::string state = argv[1], work = argv[2];

	test_durations();
	test_errors(work);
	test_barriers(state);
	test_moves(state);
	test_close(state);
	test_event_count(state);
	test_epoch_guard(state);
#ifdef __clang__
	std::printf("built as C++%ld by clang++ %s\n", __cplusplus / 100 % 100, __clang_version__);
#else
	std::printf("built as C++%ld by g++ %s\n", __cplusplus / 100 % 100, __VERSION__);
#endif
	std::printf("test_cpp_hpp: %u passed, %u failed\n", passes, failures);
	return failures ? 1 : 0;
}
