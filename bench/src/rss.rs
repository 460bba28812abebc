//! RSS sampled through the run, not only read at its end: a thread reads
//! `/proc/<pid>/status` of each server every 50 ms and keeps the highest.
//!
//! A server whose RSS first passes [`SPIKE_MB`] gets its memory map saved
//! (`smaps-<pid>.txt` beside the report, from `/proc/<pid>/smaps`) at that
//! moment: the spikes this bench has seen are rare and vanished under a
//! profiler, so the map is kept when one happens.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const EVERY: Duration = Duration::from_millis(50);

/// Well above the 80 MB target and every ordinary run's peak.
pub const SPIKE_MB: f64 = 120.0;

pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<f64>>,
}

impl Sampler {
    /// Starts sampling `pids`; memory maps of spikes go into `dir`.
    pub fn start(pids: &[u32], dir: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let pids = pids.to_vec();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peaks = vec![0.0f64; pids.len()];
            while !flag.load(Ordering::Relaxed) {
                for (peak, pid) in peaks.iter_mut().zip(&pids) {
                    let mb = super::memory_mb(*pid, "VmRSS:");
                    if mb.is_finite() {
                        if mb > SPIKE_MB && *peak <= SPIKE_MB {
                            save_map(*pid, mb, &dir);
                        }
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

fn save_map(pid: u32, mb: f64, dir: &std::path::Path) {
    let to = dir.join(format!("smaps-{pid}.txt"));
    let saved = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::copy(format!("/proc/{pid}/smaps"), &to));
    match saved {
        Ok(_) => eprintln!(
            "bench: server {pid} at {mb:.0} MB RSS; memory map saved to {}",
            to.display()
        ),
        Err(e) => eprintln!("bench: server {pid} at {mb:.0} MB RSS; memory map not saved: {e}"),
    }
}
