// SPDX-License-Identifier: MIT
//! A hand-written hazard-pointer scheme on `barrierd::fence::{light, heavy}`, as a program
//! using the `membarrier` crate would write it: readers publish a hazard pointer and
//! re-validate with only a compiler fence (`light()`), the writer replaces the shared object
//! and, before it frees retired ones, takes a `heavy()` fence and scans the hazards.
//!
//! Why it is safe: a reader's hazard store made before the writer's heavy fence began is
//! visible to the scan after it (every CPU serialised, draining its store buffer); a hazard
//! store made after that serialisation is followed by a re-load that sees the writer's swap,
//! so validation fails and the reader never uses the old object.
//!
//! ```sh
//! BARRIERD_STATE=/run/barrierd/state cargo run --example hazard -- --replacements 2000
//! ```
use std::collections::HashSet;
use std::io::Write as _;
use std::process::exit;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use barrierd::fence::{heavy, light};

const MAGIC: u64 = 0x4841_5a41_5244_2121;
const POISON: u64 = 0x6b6b_6b6b_6b6b_6b6b;
const BATCH: usize = 16;

struct Node {
    magic: AtomicU64,
    gen: u64,
    check: u64,
}

impl Node {
    fn new(gen: u64) -> *mut Node {
        Box::into_raw(Box::new(Node {
            magic: AtomicU64::new(MAGIC),
            gen,
            check: !gen,
        }))
    }
}

/// Free a node, poisoning it first so that a late reader fails loudly.
///
/// # Safety
/// `n` came from `Node::new` and no reader can reach it.
unsafe fn free(n: *mut Node) {
    (*n).magic.store(POISON, Ordering::Relaxed);
    drop(Box::from_raw(n));
}

struct Shared {
    current: AtomicPtr<Node>,
    hazards: Vec<AtomicPtr<Node>>,
    stop: AtomicBool,
    violations: AtomicU64,
    reads: AtomicU64,
}

fn reader(s: &Shared, me: usize) {
    let hazard = &s.hazards[me];
    let mut reads = 0;
    while !s.stop.load(Ordering::Relaxed) {
        let mut p = s.current.load(Ordering::Acquire);
        loop {
            hazard.store(p, Ordering::Relaxed);
            light(); // where the classic scheme needs MFENCE
            let q = s.current.load(Ordering::Acquire);
            if q == p {
                break;
            }
            p = q;
        }
        // SAFETY: p is protected: the writer frees nothing a hazard holds after its heavy().
        let n = unsafe { &*p };
        if n.magic.load(Ordering::Relaxed) != MAGIC || n.check != !n.gen {
            s.violations.fetch_add(1, Ordering::Relaxed);
        }
        hazard.store(ptr::null_mut(), Ordering::Release);
        reads += 1;
    }
    s.reads.fetch_add(reads, Ordering::Relaxed);
}

/// Returns what is still retired, to be freed once the readers have ended.
fn writer(s: &Shared, replacements: u64) -> Vec<*mut Node> {
    let mut retired: Vec<*mut Node> = Vec::new();
    for gen in 1..=replacements {
        let old = s.current.swap(Node::new(gen), Ordering::AcqRel);
        retired.push(old);
        if retired.len() >= BATCH {
            heavy(); // every reader's hazard store before this is visible now
            let held: HashSet<*mut Node> = s
                .hazards
                .iter()
                .map(|h| h.load(Ordering::Acquire))
                .collect();
            retired.retain(|&n| {
                if held.contains(&n) {
                    return true;
                }
                // SAFETY: unlinked before the fence, and no hazard holds it after it.
                unsafe { free(n) };
                false
            });
        }
    }
    s.stop.store(true, Ordering::Relaxed);
    retired
}

fn usage(code: i32) -> ! {
    let text = "usage: hazard [--replacements N] [--readers N]\n\
                Replaces a shared object N times (default 2000) under reader threads (default\n\
                2) that protect it with hazard pointers on barrierd's light()/heavy() fences.\n\
                The state file: $BARRIERD_STATE, else /run/barrierd/state.  Exit 0 when no\n\
                reader saw a freed object, 1 when one did, 64 on bad usage.";
    // A closed pipe (`--help | head`) is not an error of ours.
    let _ = if code == 0 {
        writeln!(std::io::stdout(), "{text}")
    } else {
        writeln!(std::io::stderr(), "{text}")
    };
    exit(code)
}

fn number(flag: &str, value: Option<String>) -> u64 {
    match value.as_deref().map(str::parse::<u64>) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("hazard: {flag} needs a positive number");
            usage(64)
        }
    }
}

fn main() {
    let (mut replacements, mut readers) = (2000, 2);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--replacements" => replacements = number(&a, args.next()),
            "--readers" => readers = number(&a, args.next()).min(64) as usize,
            "-h" | "--help" => usage(0),
            other => {
                eprintln!("hazard: unknown argument {other:?}");
                usage(64)
            }
        }
    }
    let s = Shared {
        current: AtomicPtr::new(Node::new(0)),
        hazards: (0..readers)
            .map(|_| AtomicPtr::new(ptr::null_mut()))
            .collect(),
        stop: AtomicBool::new(false),
        violations: AtomicU64::new(0),
        reads: AtomicU64::new(0),
    };
    let left = std::thread::scope(|sc| {
        for me in 0..readers {
            let s = &s;
            sc.spawn(move || reader(s, me));
        }
        writer(&s, replacements)
    });
    // SAFETY: every reader has ended: nothing is protected any more.
    unsafe {
        left.into_iter().for_each(|n| free(n));
        free(s.current.load(Ordering::Relaxed));
    }
    let violations = s.violations.load(Ordering::Relaxed);
    println!(
        "{replacements} replacements, {} protected reads by {readers} readers, {violations} violations",
        s.reads.load(Ordering::Relaxed)
    );
    exit(if violations == 0 { 0 } else { 1 });
}
