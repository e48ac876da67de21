//! Network namespaces held only by processes, and the TUN devices inside them.
//!
//! Teardown must work even when airlink is killed with SIGKILL, so nothing is named or
//! persistent:
//!
//! - each namespace is created by `unshare --net --pid --fork --kill-child sleep infinity`,
//!   spawned with `PR_SET_PDEATHSIG(SIGKILL)`: when airlink dies, `unshare` dies, its
//!   `--kill-child` kills `sleep`, which is PID 1 of a new PID namespace, so the kernel kills
//!   every process in it; with no process left the network namespace goes away;
//! - commands run through `nsenter --net --pid` into that PID namespace (also with
//!   `PR_SET_PDEATHSIG`), so whatever they fork dies with the namespace;
//! - TUN devices are not persistent: they vanish when airlink's descriptor closes;
//! - `setns` happens only in threads made for it (or in forked children), never on a thread
//!   that goes on doing other work.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration as StdDuration, Instant as StdInstant};

/// Something in setting up or running the namespaces failed; the message names the call or
/// command and, where it is a matter of privileges, what is missing.
#[derive(Debug)]
pub struct NsError(pub String);

impl std::fmt::Display for NsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for NsError {}

fn os_err(call: &str, e: io::Error) -> NsError {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " — emulation needs root or CAP_SYS_ADMIN + CAP_NET_ADMIN (namespaces, TUN devices); run `airlink doctor`"
        }
        Some(libc::ENOENT) if call.contains("tun") => " — the kernel has no TUN driver (/dev/net/tun); run `airlink doctor`",
        _ => "",
    };
    NsError(format!("{call}: {e}{hint}"))
}

/// Sets `PR_SET_PDEATHSIG(SIGKILL)` in a child between fork and exec.
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() == 1 {
                return Err(io::Error::other("parent died"));
            }
            Ok(())
        });
    }
}

/// A network namespace (and PID namespace) held by a process tree that dies with airlink.
pub struct Namespace {
    pub label: &'static str,
    holder: Child,
    /// PID (in airlink's PID namespace) of PID 1 of the new PID namespace.
    pub init_pid: u32,
    netns: OwnedFd,
}

impl Namespace {
    /// Creates the namespaces; `label` ("client", "server") appears in errors.
    pub fn create(label: &'static str) -> Result<Namespace, NsError> {
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--net",
            "--pid",
            "--fork",
            "--kill-child=SIGKILL",
            "sleep",
            "infinity",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        die_with_parent(&mut cmd);
        let mut holder = cmd.spawn().map_err(|e| {
            NsError(format!(
                "cannot start `unshare` (util-linux) for the {label} namespace: {e}"
            ))
        })?;
        let upid = holder.id();
        // The child of `unshare` is PID 1 of the new namespace; wait for it to exist.
        let t0 = StdInstant::now();
        let init_pid = loop {
            let children = std::fs::read_to_string(format!("/proc/{upid}/task/{upid}/children"))
                .unwrap_or_default();
            if let Some(pid) = children
                .split_whitespace()
                .next()
                .and_then(|p| p.parse::<u32>().ok())
            {
                // It must have left unshare's network namespace (exec'd sleep after setup).
                let own = std::fs::read_link("/proc/self/ns/net").ok();
                let theirs = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
                let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
                if theirs.is_some()
                    && theirs != own
                    && exe.is_some_and(|e| e.to_string_lossy().contains("sleep"))
                {
                    break pid;
                }
            }
            if let Ok(Some(status)) = holder.try_wait() {
                let mut err = String::new();
                if let Some(mut s) = holder.stderr.take() {
                    let _ = s.read_to_string(&mut err);
                }
                let err = err.trim();
                let hint = if err.contains("Operation not permitted") {
                    " — creating namespaces needs root or CAP_SYS_ADMIN; run `airlink doctor`"
                } else {
                    ""
                };
                return Err(NsError(format!("cannot create the {label} namespace: unshare exited with {status}: {err}{hint}")));
            }
            if t0.elapsed() > StdDuration::from_secs(10) {
                let _ = holder.kill();
                let _ = holder.wait();
                return Err(NsError(format!(
                    "the {label} namespace did not come up within 10 s"
                )));
            }
            std::thread::sleep(StdDuration::from_millis(1));
        };
        let path = format!("/proc/{init_pid}/ns/net");
        let netns: OwnedFd = File::open(&path)
            .map_err(|e| os_err(&format!("open {path}"), e))?
            .into();
        Ok(Namespace {
            label,
            holder,
            init_pid,
            netns,
        })
    }

    /// Runs `f` on a new thread inside the namespace (the thread ends with `f`, so the
    /// namespace switch never leaks to a thread that does other work).
    pub fn within<T: Send>(
        &self,
        f: impl FnOnce() -> Result<T, NsError> + Send,
    ) -> Result<T, NsError> {
        let fd = self.netns.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: `fd` is an open namespace descriptor owned by `self`.
                if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                    return Err(os_err("setns(CLONE_NEWNET)", io::Error::last_os_error()));
                }
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(NsError("namespace thread panicked".into())))
        })
    }

    /// Runs a set-up command (e.g. `ip ...`) inside the namespace and waits for it.
    pub fn run(&self, argv: &[&str]) -> Result<(), NsError> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        self.within(move || {
            let out = Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| NsError(format!("cannot run `{}`: {e}", argv.join(" "))))?;
            if !out.status.success() {
                return Err(NsError(format!(
                    "`{}` failed ({}): {}",
                    argv.join(" "),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            Ok(())
        })
    }

    /// Writes a sysctl (`net.` keys are per namespace) and reads it back.
    pub fn set_sysctl(&self, key: &str, value: &str) -> Result<String, NsError> {
        let path = sysctl_path(key);
        let (key, value) = (key.to_owned(), value.to_owned());
        self.within(move || {
            std::fs::write(&path, format!("{value}\n"))
                .map_err(|e| NsError(format!("sysctl {key}={value}: {e}")))?;
            read_sysctl(&path).map_err(|e| NsError(format!("sysctl {key}: {e}")))
        })
    }

    /// Reads sysctls inside the namespace (absent keys are left out).
    pub fn get_sysctls(&self, keys: &[&str]) -> Vec<(String, String)> {
        let keys: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
        self.within(move || {
            Ok(keys
                .iter()
                .filter_map(|k| read_sysctl(&sysctl_path(k)).ok().map(|v| (k.clone(), v)))
                .collect())
        })
        .unwrap_or_default()
    }

    /// Starts `sh -c command` inside the namespaces, in the given directory, with extra
    /// environment, its output to the given files (or inherited when `None`).
    pub fn spawn(
        &self,
        command: &str,
        env: &[(String, String)],
        stdout: Option<File>,
        stderr: Option<File>,
        stdin_null: bool,
    ) -> Result<Child, NsError> {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.init_pid))
            .args(["--net", "--pid", "--", "sh", "-c", command]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(f) = stdout {
            cmd.stdout(f);
        }
        if let Some(f) = stderr {
            cmd.stderr(f);
        }
        if stdin_null {
            cmd.stdin(Stdio::null());
        }
        die_with_parent(&mut cmd);
        cmd.spawn().map_err(|e| {
            NsError(format!(
                "cannot start `nsenter` for the {} command: {e}",
                self.label
            ))
        })
    }

    /// Kills every process of the namespace and waits for the holder.
    pub fn shutdown(&mut self) {
        // SAFETY: kill with a pid of ours; the PID namespace's init dying takes all with it.
        unsafe { libc::kill(self.init_pid as libc::pid_t, libc::SIGKILL) };
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn sysctl_path(key: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(key.replace('.', "/"))
}

fn read_sysctl(path: &PathBuf) -> io::Result<String> {
    Ok(std::fs::read_to_string(path)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" "))
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Opens a non-persistent TUN device `name` (no packet-info header) in the calling thread's
/// network namespace, non-blocking.
pub fn open_tun(name: &str) -> Result<OwnedFd, NsError> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(NsError(format!("interface name {name} is too long")));
    }
    // SAFETY: a NUL-terminated path; flags are plain.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(os_err("open /dev/net/tun", io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just opened and is owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) } != 0 {
        return Err(os_err(
            "ioctl(TUNSETIFF) on /dev/net/tun",
            io::Error::last_os_error(),
        ));
    }
    Ok(fd)
}

/// Addresses of the two ends (a /32 point-to-point pair on the TUN devices).
pub const SERVER_ADDR: &str = "10.77.0.1";
pub const CLIENT_ADDR: &str = "10.77.0.2";
/// Name of the emulated interface in both namespaces.
pub const IFNAME: &str = "al0";

/// Sysctls set in both namespaces before the devices exist: IPv6 off, so that the link
/// carries only what the applications send (no router solicitations or MLD reports).
pub const BASE_SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv6.conf.all.disable_ipv6", "1"),
    ("net.ipv6.conf.default.disable_ipv6", "1"),
];

/// Packets the kernel may hold for the datapath at each TUN device (its transmit ring) until
/// airlink reads them. The kernel's default of 500 overflowed under a TCP burst at 100 Mbit/s
/// (the sender's whole window arrives at once when the datapath was descheduled), dropping
/// packets the scenario never asked to drop. 10,000 packets: over a second at 100 Mbit/s,
/// 15 MB at a 1500-byte MTU.
pub const TUN_TXQUEUELEN: u32 = 10_000;

/// Creates the TUN device in `ns` and configures it: address, peer, MTU, transmit queue, up;
/// loopback up.
pub fn configure(ns: &Namespace, local: &str, peer: &str, mtu: u32) -> Result<OwnedFd, NsError> {
    for (k, v) in BASE_SYSCTLS {
        ns.set_sysctl(k, v)?;
    }
    let fd = ns.within(|| open_tun(IFNAME))?;
    ns.run(&["ip", "link", "set", "lo", "up"])?;
    ns.run(&[
        "ip",
        "addr",
        "add",
        &format!("{local}/32"),
        "peer",
        &format!("{peer}/32"),
        "dev",
        IFNAME,
    ])?;
    ns.run(&[
        "ip",
        "link",
        "set",
        IFNAME,
        "mtu",
        &mtu.to_string(),
        "txqueuelen",
        &TUN_TXQUEUELEN.to_string(),
        "up",
    ])?;
    Ok(fd)
}
