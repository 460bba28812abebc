//! RSS sampled through the run, not only read at its end: a thread reads
//! `/proc/<pid>/status` of each server every 50 ms and keeps the highest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const EVERY: Duration = Duration::from_millis(50);

pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<f64>>,
}

impl Sampler {
    /// Starts sampling `pids`.
    pub fn start(pids: &[u32]) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let pids = pids.to_vec();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peaks = vec![0.0f64; pids.len()];
            while !flag.load(Ordering::Relaxed) {
                for (peak, pid) in peaks.iter_mut().zip(&pids) {
                    let mb = super::memory_mb(*pid, "VmRSS:");
                    if mb.is_finite() {
                        *peak = peak.max(mb);
                    }
                }
                std::thread::sleep(EVERY);
            }
            peaks
        });
        Sampler { stop, thread }
    }

    /// The highest RSS of each pid, in MB, in the order given.
    pub fn stop(self) -> Vec<f64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
