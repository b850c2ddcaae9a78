// SPDX-License-Identifier: MIT
//! The safe API against a real daemon: the one `$BARRIERD_STATE` names (tests/rust's ctest
//! starts one on a temporary path).  Without a live daemon each test says so and passes,
//! unless `BARRIERD_REQUIRE_BPF=1` makes that a failure.
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use barrierd::{
    Barrierd, CpuSet, Domain, EpochDomain, Error, EventCount, HpDomain, OpenOptions, ReclaimCell,
    SpEventCount,
};

const SIGABRT: i32 = 6;

const HANG_GUARD: Option<Duration> = Some(Duration::from_secs(10));

fn daemon() -> Option<Barrierd> {
    let why = match Barrierd::open() {
        Ok(b) if b.live() => return Some(b),
        Ok(_) => "the state file has no live daemon".to_string(),
        Err(e) => format!("cannot open the state file: {e}"),
    };
    if std::env::var_os("BARRIERD_REQUIRE_BPF").map_or(false, |v| v == "1") {
        panic!("{why}, and BARRIERD_REQUIRE_BPF=1 forbids skipping");
    }
    eprintln!("SKIP: {why} (set BARRIERD_STATE to a running daemon's file)");
    None
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("barrierd-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn barrier_stamp_wait_and_passed() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    b.barrier(HANG_GUARD).unwrap();
    let t = b.stamp();
    assert!(t.ns() > b.open_ns());
    b.wait(t, HANG_GUARD).unwrap();
    assert!(b.passed(t), "a stamp a wait returned for has passed");
    b.request().unwrap();
    let v = b.stamp_vtime();
    b.wait_vtime(v, HANG_GUARD).unwrap();
    assert!(b.passed_vtime(v));
    assert!(b.direct(), "the test daemon hands out its slots");
}

#[test]
fn a_vtime_stamp_is_for_its_own_handle() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    let other = Barrierd::open().unwrap(); // the same file: still another handle
    let v = other.stamp_vtime();
    other.wait_vtime(v, HANG_GUARD).unwrap();
    assert!(other.passed_vtime(v));
    assert_eq!(b.wait_vtime(v, HANG_GUARD), Err(Error::InvalidArgument));
    assert!(!b.passed_vtime(v));
}

#[test]
fn wait_cpus_on_every_cpu_and_on_one() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    let n = std::thread::available_parallelism().unwrap().get();
    let all: CpuSet = (0..n).collect();
    b.wait_cpus(b.stamp(), &all, HANG_GUARD).unwrap();
    let one: CpuSet = [0].into_iter().collect();
    b.wait_cpus(b.stamp(), &one, HANG_GUARD).unwrap();
}

#[test]
fn threads_share_one_handle() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    b.barrier(HANG_GUARD).unwrap();
                }
            });
        }
    });
}

#[test]
fn open_errors_map_to_their_variants() {
    assert_eq!(
        Barrierd::open_path(scratch("missing")).unwrap_err(),
        Error::NotFound
    );
    assert_eq!(
        Barrierd::open_path("/a\0b").unwrap_err(),
        Error::InvalidArgument
    );
    let writable = scratch("world-writable");
    std::fs::write(&writable, [0u8; 4096]).unwrap();
    std::fs::set_permissions(&writable, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(
        Barrierd::open_path(&writable).unwrap_err(),
        Error::PermissionDenied,
        "a file others may write is not trusted"
    );
}

#[test]
fn attach_later_runs_on_its_fallback() {
    let missing = scratch("not-yet");
    let b = OpenOptions::new()
        .path(&missing)
        .attach_later(true)
        .fallback_membarrier(true)
        .open()
        .unwrap();
    assert!(!b.live());
    b.barrier(HANG_GUARD).unwrap(); // membarrier(GLOBAL) at once
    let b = OpenOptions::new()
        .path(&missing)
        .attach_later(true)
        .open()
        .unwrap();
    let e = b.barrier(Some(Duration::from_millis(20))).unwrap_err();
    assert!(matches!(e, Error::Stale | Error::TimedOut), "{e:?}");
}

#[test]
fn single_producer_event_count_loses_no_wakeup() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    let ec = SpEventCount::new(0);
    let mut producer = ec.producer().unwrap();
    const ITEMS: u64 = 2000;
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..ITEMS {
                if i % 64 == 0 {
                    std::thread::sleep(Duration::from_micros(200)); // let the waiter block
                }
                producer.inc();
            }
        });
        let mut seen = 0;
        while seen < ITEMS {
            ec.wait(Some(&b), seen, HANG_GUARD)
                .expect("a wake-up came within the hang guard");
            let v = ec.value();
            assert!(v > seen);
            seen = v;
        }
    });
}

#[test]
fn multi_producer_event_count_and_predicate() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    let ec = EventCount::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| (0..500).for_each(|_| ec.inc()));
        }
        let mut seen = 0;
        while seen < 1000 {
            ec.wait(Some(&b), seen, HANG_GUARD).unwrap();
            seen = ec.value();
        }
    });
    // A predicate true at its first call ends the wait with the value unmoved.
    let mut calls = 0;
    let how = ec
        .wait_until(Some(&b), 1000, HANG_GUARD, |v| {
            calls += 1;
            v == 1000
        })
        .unwrap();
    assert_eq!((how, calls), (barrierd::Woken::Predicate, 1));
}

/// An object that checks itself: a reader that reads a freed one finds the poison.
struct Obj {
    magic: AtomicU64,
    gen: u64,
    payload: [u64; 6],
    drops: &'static AtomicU64,
}

const MAGIC: u64 = 0x0b1e_c7ed_0b1e_c7ed;

impl Obj {
    fn new(gen: u64, drops: &'static AtomicU64) -> Box<Obj> {
        Box::new(Obj {
            magic: AtomicU64::new(MAGIC),
            gen,
            payload: [gen.wrapping_mul(0x9e37_79b9_7f4a_7c15); 6],
            drops,
        })
    }

    fn check(&self) {
        assert_eq!(
            self.magic.load(Ordering::Relaxed),
            MAGIC,
            "a freed object was read"
        );
        let want = self.gen.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        assert!(self.payload.iter().all(|&p| p == want), "a torn object");
    }
}

impl Drop for Obj {
    fn drop(&mut self) {
        self.magic.store(0x6b6b_6b6b_6b6b_6b6b, Ordering::Relaxed);
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

const TORTURE: Duration = Duration::from_millis(400);

/// Two readers run `read` (each registers, then reads until told to stop) while the writer
/// replaces the cell's object for TORTURE; then the domain is dropped (its final reclaim).
/// Every object must have been dropped exactly once (counted in `drops`, one per test: the
/// tests run in parallel), and none read after its drop.
fn torture<D, F>(domain: D, drops: &'static AtomicU64, read: F)
where
    D: Domain + Sync,
    F: Fn(&D, &ReclaimCell<'_, D, Obj>, &AtomicBool) + Sync,
{
    let cell = ReclaimCell::new(&domain, Obj::new(0, drops));
    let stop = AtomicBool::new(false);
    let replaced = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| read(&domain, &cell, &stop));
        }
        let start = Instant::now();
        let mut gen = 0;
        while start.elapsed() < TORTURE {
            gen += 1;
            cell.replace(Obj::new(gen, drops)).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        gen
    });
    drop(cell);
    domain.reclaim().unwrap();
    drop(domain);
    assert!(replaced > 10, "only {replaced} replacements");
    assert_eq!(
        drops.load(Ordering::Relaxed),
        replaced + 1,
        "every object dropped once"
    );
}

#[test]
fn epoch_readers_never_see_a_freed_object() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    static DROPS: AtomicU64 = AtomicU64::new(0);
    torture(
        EpochDomain::new(&b, 4).unwrap(),
        &DROPS,
        |domain, cell, stop| {
            let mut r = domain.register().unwrap();
            while !stop.load(Ordering::Relaxed) {
                let g = r.enter();
                for _ in 0..8 {
                    cell.load(&g).check();
                }
            }
        },
    );
}

#[test]
fn hazard_pointer_readers_never_see_a_freed_object() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    static DROPS: AtomicU64 = AtomicU64::new(0);
    torture(
        HpDomain::new(&b, 4).unwrap(),
        &DROPS,
        |domain, cell, stop| {
            let r = domain.register().unwrap();
            while !stop.load(Ordering::Relaxed) {
                let g = cell.protect(&r).unwrap();
                for _ in 0..8 {
                    g.check();
                }
            }
        },
    );
}

#[test]
fn a_reader_inside_holds_synchronize_until_it_leaves() {
    let b = match daemon() {
        Some(b) => b,
        None => return,
    };
    let domain = EpochDomain::new(&b, 0).unwrap();
    let (entered_tx, entered) = mpsc::channel();
    let (leave_tx, leave) = mpsc::channel::<()>();
    let domain = &domain;
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut r = domain.register().unwrap();
            let g = r.enter();
            entered_tx.send(()).unwrap();
            leave.recv().unwrap();
            drop(g);
        });
        entered.recv().unwrap();
        assert_eq!(
            domain.synchronize(Some(Duration::from_millis(20))),
            Err(Error::TimedOut)
        );
        leave_tx.send(()).unwrap();
    });
    domain.synchronize(HANG_GUARD).unwrap();
}

#[test]
fn heavy_fence_orders_an_asymmetric_dekker() {
    let _b = match daemon() {
        Some(b) => b,
        None => return,
    };
    // Each round: the fast side stores its flag, light(), loads the other's; the slow side
    // the same with heavy().  At least one of them must see the other's store.
    let (fast, slow) = (AtomicU64::new(0), AtomicU64::new(0));
    for round in 1..=200u64 {
        let (mut fast_saw, mut slow_saw) = (0, 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                fast.store(round, Ordering::Relaxed);
                barrierd::fence::light();
                fast_saw = slow.load(Ordering::Relaxed);
            });
            slow.store(round, Ordering::Relaxed);
            barrierd::fence::heavy();
            slow_saw = fast.load(Ordering::Relaxed);
        });
        assert!(
            fast_saw == round || slow_saw == round,
            "round {round}: both missed"
        );
    }
}

/// This test binary again, on the test `name` alone: for a test that needs a process of its
/// own (the environment tells the child what to do).
fn rerun(name: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", name, "--nocapture"]);
    c
}

/// Set in the child process of `try_heavy_falls_back_when_the_handle_fails`.
const HEAVY_CHILD: &str = "BARRIERD_TEST_HEAVY_CHILD";

/// heavy()'s handle is the process's own, so this runs in a child (this test binary, on this
/// test alone) whose `$BARRIERD_STATE` names a missing file: the handle opens attach-later,
/// then the file appears untrusted (mode 0666) and the handle's barriers fail with
/// `PermissionDenied`.  `try_heavy()` must still give a barrier, by `membarrier(GLOBAL)`.
#[test]
fn try_heavy_falls_back_when_the_handle_fails() {
    if let Some(path) = std::env::var_os(HEAVY_CHILD) {
        return heavy_child(Path::new(&path));
    }
    if let Err(e) = barrierd::membarrier::global() {
        eprintln!("SKIP: membarrier(GLOBAL) is not available here ({e}): nothing to fall back to");
        return;
    }
    let path = scratch("heavy-untrusted");
    let _ = std::fs::remove_file(&path);
    let out = rerun("try_heavy_falls_back_when_the_handle_fails")
        .env(HEAVY_CHILD, &path)
        .env("BARRIERD_STATE", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {stderr}");
    assert!(
        stderr.contains("heavy fell back"),
        "the child ran no test: {stderr}"
    );
}

fn heavy_child(path: &Path) {
    // The first call opens the process's handle on the missing file; its fallback serves it.
    barrierd::fence::try_heavy().unwrap();
    // A handle like it, to show that the file that appears makes such a handle fail.
    let witness = OpenOptions::new()
        .path(path)
        .attach_later(true)
        .fallback_membarrier(true)
        .open()
        .unwrap();
    std::fs::write(path, [0u8; 4096]).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
    // The library looks for the file at most every 10 ms per handle: past that, each call
    // below attaches and is refused.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(witness.barrier(HANG_GUARD), Err(Error::PermissionDenied));
        barrierd::fence::try_heavy().expect("membarrier(GLOBAL) after the handle's error");
        barrierd::fence::heavy(); // and no abort
    }
    eprintln!("heavy fell back");
}

/// Set in the child processes of `a_panicking_drop_in_a_reclaim_aborts`.
const DROP_CHILD: &str = "BARRIERD_TEST_DROP_CHILD";

/// A panic payload whose own `Drop` panics: dropping it inside the free function would unwind
/// into the library.
struct PanickingPayload;

impl Drop for PanickingPayload {
    fn drop(&mut self) {
        panic!("the payload's drop");
    }
}

/// Retired into a domain: its `Drop` panics with a [`PanickingPayload`].
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        std::panic::panic_any(PanickingPayload);
    }
}

/// A retired object's `Drop` that panics (with a payload that panics when dropped) inside the
/// library's reclaim must abort the process, not unwind through C: with stderr a pipe, and
/// with stderr a closed pipe (where `eprintln!` would panic).
#[test]
fn a_panicking_drop_in_a_reclaim_aborts() {
    if std::env::var_os(DROP_CHILD).is_some() {
        let domain = EpochDomain::with_membarrier(0).unwrap();
        domain
            .retire(Box::new(PanicsOnDrop))
            .map_err(|(e, _)| e)
            .unwrap();
        let _ = domain.reclaim(); // never returns
        unreachable!("the reclaim returned");
    }
    let child = || {
        let mut c = rerun("a_panicking_drop_in_a_reclaim_aborts");
        c.env(DROP_CHILD, "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    };
    let out = child().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(SIGABRT), "{stderr}");
    assert!(
        stderr.contains("Drop panicked inside libbarrierd; aborting"),
        "{stderr}"
    );
    // The same with nobody reading stderr: still an abort.
    let mut c = child().spawn().unwrap();
    drop(c.stderr.take());
    let status = c.wait().unwrap();
    assert_eq!(status.signal(), Some(SIGABRT));
}
