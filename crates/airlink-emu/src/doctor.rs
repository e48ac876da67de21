//! `airlink doctor`: what this machine allows the emulator to do. Every check does the real
//! thing on a throw-away thread or reads the kernel's own answer; nothing is assumed.

use serde::Serialize;

/// One check: its name, whether it passed, what was found, and whether emulation needs it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub required: bool,
    pub detail: String,
}

fn cap_effective() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()
}

fn on_path(tool: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Creates a network namespace on a throw-away thread and a TUN device inside it.
fn netns_and_tun() -> (Result<(), String>, Result<(), String>) {
    std::thread::spawn(|| {
        // SAFETY: unshare of the network namespace affects only this thread, which ends here.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            let e = std::io::Error::last_os_error();
            return (
                Err(format!("unshare(CLONE_NEWNET): {e}")),
                Err("not tried: no namespace".into()),
            );
        }
        let tun = crate::ns::open_tun("aldoctor0").map(drop).map_err(|e| e.0);
        (Ok(()), tun)
    })
    .join()
    .unwrap_or_else(|_| {
        (
            Err("probe thread panicked".into()),
            Err("probe thread panicked".into()),
        )
    })
}

fn rlimit(res: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid rlimit struct.
    unsafe { libc::getrlimit(res, &mut r) };
    (r.rlim_cur, r.rlim_max)
}

fn fmt_limit(v: u64) -> String {
    if v == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

/// Runs every check.
pub fn checks() -> Vec<Check> {
    let mut out = Vec::new();
    let caps = cap_effective();
    let has = |bit: u32| caps.is_some_and(|c| c & (1u64 << bit) != 0);
    // SAFETY: geteuid has no failure mode.
    let euid = unsafe { libc::geteuid() };
    out.push(Check {
        name: "CAP_NET_ADMIN",
        ok: has(12),
        required: true,
        detail: format!(
            "uid {euid}, effective capabilities {}",
            caps.map_or("unknown".into(), |c| format!("{c:#x}"))
        ),
    });
    out.push(Check {
        name: "CAP_SYS_ADMIN (namespaces, setns)",
        ok: has(21),
        required: true,
        detail: String::new(),
    });
    let (netns, tun) = netns_and_tun();
    out.push(Check {
        name: "network namespaces",
        ok: netns.is_ok(),
        required: true,
        detail: netns
            .err()
            .unwrap_or_else(|| "created one with unshare(CLONE_NEWNET)".into()),
    });
    out.push(Check {
        name: "TUN devices",
        ok: tun.is_ok(),
        required: true,
        detail: tun
            .err()
            .unwrap_or_else(|| "created a TUN device in a new namespace".into()),
    });
    for (tool, required, why) in [
        ("ip", true, "iproute2: addresses and links"),
        ("unshare", true, "util-linux: namespace holders"),
        ("nsenter", true, "util-linux: commands in the namespaces"),
        ("iperf3", false, "throughput tests"),
        ("ping", false, "delay tests"),
        ("tshark", false, "reading the pcaps"),
    ] {
        let found = on_path(tool);
        out.push(Check {
            name: tool,
            ok: found.is_some(),
            required,
            detail: found.map_or(format!("not found on PATH ({why})"), |p| {
                format!("{p} ({why})")
            }),
        });
    }
    let available = read("/proc/sys/net/ipv4/tcp_available_congestion_control");
    let default = read("/proc/sys/net/ipv4/tcp_congestion_control");
    out.push(Check {
        name: "TCP congestion controls",
        ok: available.is_some(),
        required: false,
        detail: format!(
            "available: {}; default: {}; more load on demand from modules",
            available.as_deref().unwrap_or("?"),
            default.as_deref().unwrap_or("?")
        ),
    });
    let fifo = crate::rt::probe_fifo();
    let (rt_cur, rt_max) = rlimit(libc::RLIMIT_RTPRIO);
    out.push(Check {
        name: "real-time priority (SCHED_FIFO)",
        ok: fifo.is_ok(),
        required: false,
        detail: format!(
            "{}; RLIMIT_RTPRIO {}/{}; sched_rt_runtime_us {}",
            fifo.err().unwrap_or_else(|| "granted".into()),
            fmt_limit(rt_cur),
            fmt_limit(rt_max),
            read("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_else(|| "?".into())
        ),
    });
    let (ml_cur, _) = rlimit(libc::RLIMIT_MEMLOCK);
    out.push(Check {
        name: "memory locking (mlockall)",
        ok: has(14) || ml_cur == libc::RLIM_INFINITY,
        required: false,
        detail: format!(
            "CAP_IPC_LOCK {}, RLIMIT_MEMLOCK {}",
            if has(14) { "yes" } else { "no" },
            fmt_limit(ml_cur)
        ),
    });
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) };
    let clocksource = read("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    out.push(Check {
        name: "high-resolution timers",
        ok: res.tv_sec == 0 && res.tv_nsec <= 1000,
        required: false,
        detail: format!(
            "CLOCK_MONOTONIC resolution {} ns, clocksource {}",
            res.tv_nsec,
            clocksource.as_deref().unwrap_or("?")
        ),
    });
    out
}
