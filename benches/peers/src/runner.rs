//! Running a generator on threads: a number of calls split among threads
//! that start together (criterion's views), or calls for a span of time
//! with each thread's CPU time (the cap and latency views).

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::contenders::Contender;

/// Runs `iters` calls split over `threads` threads (on this one for 1) and
/// returns the wall time from the moment all are ready.
pub fn run_for_iters<G: Contender + ?Sized>(g: &G, threads: usize, iters: u64) -> Duration {
    if threads == 1 {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(g.id());
        }
        return start.elapsed();
    }
    let per_thread = iters.div_ceil(threads as u64);
    let ready = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                ready.wait();
                for _ in 0..per_thread {
                    black_box(g.id());
                }
            });
        }
        ready.wait();
        let start = Instant::now();
        // The scope joins the threads before returning.
        start
    })
    .elapsed()
}

/// Time this thread has spent on a CPU, from the kernel (Linux only).
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// What one thread did in a timed run.
pub struct ThreadRun<T> {
    pub out: T,
    pub cpu: Option<Duration>,
}

/// Runs `work` on `threads` threads until `duration` has passed since all
/// were ready (it checks `stop` between calls); returns each thread's output
/// and CPU time, and the wall time.
pub fn run_for_time<T: Send>(
    threads: usize,
    duration: Duration,
    work: impl Fn(&AtomicBool) -> T + Sync,
) -> (Vec<ThreadRun<T>>, Duration) {
    let ready = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    ready.wait();
                    let cpu_before = thread_cpu_time();
                    let out = work(&stop);
                    let cpu = thread_cpu_time()
                        .zip(cpu_before)
                        .map(|(after, before)| after.saturating_sub(before));
                    ThreadRun { out, cpu }
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let runs = handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect();
        (runs, start.elapsed())
    })
}
