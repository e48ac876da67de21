//! Real-time settings of the datapath thread: `SCHED_FIFO`, `mlockall`, a 1 ns timer slack.
//! Each is tried; what was refused is reported, never fatal (notes/timing.md: absolute
//! deadlines keep the average rate exact without them; only the tail worsens).

use serde::Serialize;

/// The SCHED_FIFO priority of the datapath (above ordinary RT helpers, below kernel threads).
pub const FIFO_PRIORITY: i32 = 50;
/// airlink's own endpoints run just below the datapath: the links' timing comes first.
pub const STACK_FIFO_PRIORITY: i32 = FIFO_PRIORITY - 1;

/// What [`apply`] obtained; `None` = granted, `Some(reason)` = refused.
#[derive(Clone, Debug, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct RtReport {
    pub sched_fifo: Option<String>,
    pub mlockall: Option<String>,
    pub timerslack: Option<String>,
}

impl RtReport {
    pub fn all_granted(&self) -> bool {
        self.sched_fifo.is_none() && self.mlockall.is_none() && self.timerslack.is_none()
    }

    /// One line per refused setting, for the run's warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(e) = &self.sched_fifo {
            w.push(format!("datapath runs without SCHED_FIFO ({e}): expect a longer tail of late packets under load"));
        }
        if let Some(e) = &self.mlockall {
            w.push(format!(
                "memory not locked (mlockall: {e}): page faults may delay packets"
            ));
        }
        if let Some(e) = &self.timerslack {
            w.push(format!("timer slack not reduced (PR_SET_TIMERSLACK: {e})"));
        }
        w
    }
}

fn last_error(call: &str) -> String {
    format!("{call}: {}", std::io::Error::last_os_error())
}

/// Applies the real-time settings to the calling thread (`mlockall` to the whole process).
pub fn apply(fifo: bool, lock_memory: bool) -> RtReport {
    apply_at(FIFO_PRIORITY, fifo, lock_memory)
}

/// [`apply`] with another SCHED_FIFO priority.
pub fn apply_at(priority: i32, fifo: bool, lock_memory: bool) -> RtReport {
    let mut r = RtReport::default();
    if fifo {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: 0 = the calling thread; a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            r.sched_fifo = Some(last_error("sched_setscheduler(SCHED_FIFO)"));
        }
    } else {
        r.sched_fifo = Some("not asked for".into());
    }
    if lock_memory {
        // MCL_ONFAULT: lock pages as they are touched instead of populating every mapping at
        // once. Without it, a large allocation elsewhere in the process (pyarrow reserves big
        // regions) is populated under the mmap lock and stalls the datapath for 100s of ms.
        // SAFETY: plain flags.
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) } != 0
        {
            r.mlockall = Some(last_error("mlockall"));
        }
    } else {
        r.mlockall = Some("not asked for".into());
    }
    // SAFETY: PR_SET_TIMERSLACK takes the slack in ns; affects the calling thread only.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        r.timerslack = Some(last_error("prctl(PR_SET_TIMERSLACK)"));
    }
    r
}

/// Whether this process may use SCHED_FIFO, tried on a throw-away thread.
pub fn probe_fifo() -> Result<(), String> {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: as in `apply`; the thread ends right after.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(last_error("sched_setscheduler(SCHED_FIFO)"));
        }
        Ok(())
    })
    .join()
    .unwrap_or_else(|_| Err("probe thread panicked".into()))
}
