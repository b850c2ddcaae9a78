// SPDX-License-Identifier: MIT
//! barrierd-bench: `barrierd::fence::heavy()` against what the `membarrier` crate's `heavy()`
//! does (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, registered first) and against
//! `membarrier(MEMBARRIER_CMD_GLOBAL)`, in one run: per round, one block of calls per method,
//! the methods' order rotating from round to round; every call after a random gap, so that no
//! sample starts right after another call.  Latency percentiles per method, and IPIs per call
//! from /proc/interrupts (CAL, TLB, RES and IWI rows; all CPUs, read before and after each
//! block, so other processes' interrupts count too: run it on a quiet machine).
use std::io::Write as _;
use std::process::exit;
use std::thread::sleep;
use std::time::{Duration, Instant};

use barrierd::{fence, membarrier, Barrierd};

struct Method {
    name: &'static str,
    call: fn() -> barrierd::Result<()>,
    samples: Vec<Duration>,
    /// IPIs counted over its blocks, per row of `IPI_ROWS`.
    ipis: [u64; IPI_ROWS.len()],
}

/// The /proc/interrupts rows counted: function-call IPIs (membarrier's expedited commands),
/// TLB shootdowns, rescheduling IPIs and IRQ-work interrupts (a busy CPU's signal to the
/// daemon is an IRQ-work self-interrupt).
const IPI_ROWS: [&str; 4] = ["CAL:", "TLB:", "RES:", "IWI:"];

struct Options {
    rounds: usize,
    calls: usize,
    max_gap_us: u64,
    busy: usize,
}

const USAGE: &str =
    "usage: barrierd-bench [--rounds N] [--calls N] [--max-gap-us N] [--busy N] [--quick]

Times barrierd::fence::heavy() (a barrierd barrier on $BARRIERD_STATE, else
/run/barrierd/state), membarrier(PRIVATE_EXPEDITED) and membarrier(GLOBAL) in one run:
N rounds (default 5) of one block of N calls (default 200) per method, the order rotating,
each call after a random gap of up to --max-gap-us microseconds (default 200).  Prints
p50/p90/p99/max latency and interrupts per call (/proc/interrupts rows CAL: function-call
IPIs, TLB: shootdowns, RES: rescheduling IPIs, IWI: IRQ work; all CPUs, so other processes'
count too).
--busy N: N threads of this process spin meanwhile (default 0), as a program's readers
would, pinned to CPUs 1..N (the caller to CPU 0): PRIVATE_EXPEDITED then interrupts their
CPUs, and barrierd waits for their CPUs' events.
--quick: 2 rounds of 50 calls.  Exit 0, 1 when a call fails, 64 on bad usage.";

fn usage_error(why: &str) -> ! {
    eprintln!("barrierd-bench: {why}\n{USAGE}");
    exit(64)
}

fn parse_args() -> Options {
    let mut o = Options {
        rounds: 5,
        calls: 200,
        max_gap_us: 200,
        busy: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |min: u64| -> u64 {
            match args.next().as_deref().map(str::parse::<u64>) {
                Some(Ok(n)) if n >= min => n,
                _ => usage_error(&format!("{a} needs a number of at least {min}")),
            }
        };
        match a.as_str() {
            "--rounds" => o.rounds = value(1) as usize,
            "--calls" => o.calls = value(1) as usize,
            "--max-gap-us" => o.max_gap_us = value(0),
            "--busy" => o.busy = value(0) as usize,
            "--quick" => {
                o.rounds = 2;
                o.calls = 50;
            }
            "-h" | "--help" => {
                // A closed pipe (`| head`) is not an error of ours.
                let _ = writeln!(std::io::stdout(), "{USAGE}");
                exit(0)
            }
            other => usage_error(&format!("unknown argument {other:?}")),
        }
    }
    o
}

/// The `IPI_ROWS` of /proc/interrupts, each summed over CPUs.
fn ipis() -> [u64; IPI_ROWS.len()] {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    let mut counts = [0; IPI_ROWS.len()];
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let row = words.next().unwrap_or("");
        if let Some(i) = IPI_ROWS.iter().position(|r| *r == row) {
            counts[i] = words.map_while(|w| w.parse::<u64>().ok()).sum();
        }
    }
    counts
}

extern "C" {
    fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
}

/// Pin the calling thread to CPU `cpu` modulo the CPU count (best effort: a refusal, by a
/// cpuset for one, leaves it unpinned and says so).
fn pin(cpu: usize, cpus: usize) {
    let cpu = cpu % cpus.max(1);
    let mut mask = vec![0u64; cpu / 64 + 1];
    mask[cpu / 64] |= 1 << (cpu % 64);
    // SAFETY: mask is valid for its size in bytes; pid 0 is the calling thread.
    if unsafe { sched_setaffinity(0, mask.len() * 8, mask.as_ptr()) } != 0 {
        eprintln!(
            "barrierd-bench: cannot pin a thread to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// xorshift64: random gaps, no crate needed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            self.0 % n
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    let o = parse_args();
    match Barrierd::open() {
        Ok(b) if b.live() => println!(
            "barrierd: live daemon, direct evidence {}",
            if b.direct() { "on" } else { "off" }
        ),
        Ok(_) => println!("barrierd: NO live daemon: heavy() runs on its membarrier fallback"),
        Err(e) => println!("barrierd: {e}: heavy() runs on membarrier(GLOBAL)"),
    }
    if let Err(e) = membarrier::register_private_expedited() {
        eprintln!("barrierd-bench: membarrier(REGISTER_PRIVATE_EXPEDITED): {e}");
        exit(1);
    }
    let mut methods = [
        Method {
            name: "barrierd heavy()",
            call: fence::try_heavy,
            samples: Vec::new(),
            ipis: [0; IPI_ROWS.len()],
        },
        Method {
            name: "membarrier(PRIVATE_EXPEDITED)",
            call: membarrier::private_expedited,
            samples: Vec::new(),
            ipis: [0; IPI_ROWS.len()],
        },
        Method {
            name: "membarrier(GLOBAL)",
            call: membarrier::global,
            samples: Vec::new(),
            ipis: [0; IPI_ROWS.len()],
        },
    ];
    // The first heavy() opens the process's handle: not a sample.
    fence::heavy();
    let seed = Instant::now().elapsed().as_nanos() as u64 | 1;
    let mut rng = Rng(seed ^ u64::from(std::process::id()) << 32);
    // Counted before any pinning narrows this process's affinity.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        if o.busy > 0 {
            pin(0, cpus);
        }
        for i in 0..o.busy {
            let stop = &stop;
            s.spawn(move || {
                pin(1 + i, cpus);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        run(&o, &mut methods, &mut rng);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    report(&o, &mut methods, cpus);
}

/// Every round: one block per method, the order rotating.
fn run(o: &Options, methods: &mut [Method], rng: &mut Rng) {
    let n = methods.len();
    for round in 0..o.rounds {
        for k in 0..n {
            let m = &mut methods[(round + k) % n];
            let before = ipis();
            for _ in 0..o.calls {
                sleep(Duration::from_micros(rng.below(o.max_gap_us + 1)));
                let t0 = Instant::now();
                let r = (m.call)();
                m.samples.push(t0.elapsed());
                if let Err(e) = r {
                    eprintln!("barrierd-bench: {}: {e}", m.name);
                    exit(1);
                }
            }
            let after = ipis();
            for (i, total) in m.ipis.iter_mut().enumerate() {
                *total += after[i].saturating_sub(before[i]);
            }
        }
    }
}

fn report(o: &Options, methods: &mut [Method], cpus: usize) {
    println!(
        "{} rounds x {} calls per method, {cpus} CPUs, gaps up to {} us, {} busy threads\n",
        o.rounds, o.calls, o.max_gap_us, o.busy
    );
    println!(
        "| method | calls | p50 us | p90 us | p99 us | max us | CAL/call | TLB/call | RES/call | IWI/call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for m in methods.iter_mut() {
        m.samples.sort();
        let calls = m.samples.len();
        println!(
            "| {} | {calls} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} |",
            m.name,
            percentile(&m.samples, 0.5),
            percentile(&m.samples, 0.9),
            percentile(&m.samples, 0.99),
            percentile(&m.samples, 1.0),
            m.ipis[0] as f64 / calls as f64,
            m.ipis[1] as f64 / calls as f64,
            m.ipis[2] as f64 / calls as f64,
            m.ipis[3] as f64 / calls as f64,
        );
    }
}
