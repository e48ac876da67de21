//! Gateway mode: the datapath between two existing network interfaces instead of two TUN
//! devices, the way WIPEMU sat as a box between a real server and a real client.
//!
//! Each side is a packet socket (`AF_PACKET`, `SOCK_RAW`) bound to its interface in
//! promiscuous mode, so the gateway is a transparent bridge: the hosts on either side address
//! each other directly and know nothing of airlink. IP frames cross the scenario's links and
//! leave with the Ethernet header they came with; ARP and other frames pass at once.
//!
//! What it needs and changes, and what it restores:
//! - root (`CAP_NET_RAW` for the sockets, `CAP_NET_ADMIN` for the offloads);
//! - promiscuous mode: a packet-socket membership, which the kernel drops when the socket
//!   closes, so it ends with the process even after `kill -9`;
//! - receive offloads off (GRO, LRO) and segmentation offloads off (GSO, TSO): merged or
//!   unsegmented frames would cross the links as one large packet. The settings found are
//!   written to a state file under `/run/airlink/` and put back when the gateway stops; after
//!   a `kill -9` the next gateway on the interface puts them back first (or `airlink gateway
//!   --restore IFACE`). The file names its gateway by PID and start time, so that a PID reused
//!   by another process does not keep the interface blocked. A host that sends through a veth pair carries its own segmentation
//!   offload across it: its TSO/GSO must be off too, which the gateway cannot do for it.

use crate::datapath::new_fd;
use crate::port::{read_fd, write_fd, LinkHeader, Port, PortCounters, Received, ETHERNET_HEADER};
use crate::timing::monotonic_ns;
use crate::EmuError;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;

/// The offloads the gateway turns off: (name, legacy ethtool get command, set command).
const OFFLOADS: [(&str, u32, u32); 3] = [
    ("gro", 0x2b, 0x2c), // ETHTOOL_GGRO, ETHTOOL_SGRO
    ("gso", 0x23, 0x24), // ETHTOOL_GGSO, ETHTOOL_SGSO
    ("tso", 0x1e, 0x1f), // ETHTOOL_GTSO, ETHTOOL_STSO
];
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETHTOOL_SFLAGS: u32 = 0x26;
const ETH_FLAG_LRO: u32 = 1 << 15;
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const STATE_DIR: &str = "/run/airlink";

/// The two sides of a gateway, open and configured.
pub struct Sides {
    pub client: OwnedFd,
    pub server: OwnedFd,
    /// The smaller of the two interfaces' MTUs.
    pub mtu: u32,
    pub offloads: Offloads,
}

impl Sides {
    /// The two sides as the datapath's ports: (client's, server's).
    pub fn ports(client: OwnedFd, server: OwnedFd) -> (PacketSocketPort, PacketSocketPort) {
        let (client, server) = (Arc::new(client), Arc::new(server));
        let port = |fd: &Arc<OwnedFd>, peer: &Arc<OwnedFd>| PacketSocketPort {
            fd: fd.clone(),
            peer: peer.clone(),
            counters: PortCounters::default(),
        };
        (port(&client, &server), port(&server, &client))
    }
}

/// Frames other than IP one read may pass to the other side before it returns (the datapath
/// then gives its timers their turn; `epoll` brings it back at once).
const PASS_BATCH: usize = 64;

/// A gateway's port: a packet socket on one interface (see [`crate::port`]). IP frames cross
/// the links and leave with the Ethernet header they came with; other frames (ARP, ...) are
/// passed to the other side at once: the two hosts must find each other, outside the model.
pub struct PacketSocketPort {
    fd: Arc<OwnedFd>,
    /// The other side's socket.
    peer: Arc<OwnedFd>,
    counters: PortCounters,
}

impl Port for PacketSocketPort {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn recv(&mut self, buf: &mut [u8]) -> Option<Received> {
        for _ in 0..PASS_BATCH {
            let len = read_fd(self.fd.as_raw_fd(), buf)?;
            let frame = &buf[..len];
            let ip = len > ETHERNET_HEADER
                && matches!([frame[12], frame[13]], [0x08, 0x00] | [0x86, 0xdd]);
            if ip {
                let header = frame[..ETHERNET_HEADER].try_into().expect("checked length");
                return Some(Received {
                    ip: ETHERNET_HEADER..len,
                    link: LinkHeader(Some(header)),
                    mono_ns: monotonic_ns(),
                });
            }
            if write_fd(self.peer.as_raw_fd(), None, frame).is_err() {
                self.counters.write_errors += 1;
            }
            self.counters.passed_through += 1;
        }
        None
    }

    fn send(&mut self, packet: &[u8], link: &LinkHeader, _mono_ns: u64) -> std::io::Result<()> {
        write_fd(self.fd.as_raw_fd(), link.0.as_ref().map(|h| &h[..]), packet)
    }

    fn counters(&self) -> PortCounters {
        self.counters
    }
}

/// The interfaces' offloads as found: put back when dropped.
#[derive(Default)]
pub struct Offloads(Vec<Saved>);

impl Drop for Offloads {
    fn drop(&mut self) {
        for s in &self.0 {
            s.restore();
        }
    }
}

/// An interface's offloads as found, to be put back.
struct Saved {
    iface: String,
    /// Offloads that were on: the names of [`OFFLOADS`] and "lro".
    on: Vec<String>,
}

impl Saved {
    fn path(iface: &str) -> PathBuf {
        PathBuf::from(STATE_DIR).join(format!("gateway-{iface}.offloads"))
    }

    fn restore(&self) {
        let _ = set_offloads(&self.iface, &self.on, true);
        let _ = std::fs::remove_file(Self::path(&self.iface));
    }
}

/// Opens both sides: checks root and the interfaces, puts back what a killed gateway left
/// behind, turns the offloads off (saving them), and binds the packet sockets.
pub fn open(client_iface: &str, server_iface: &str) -> Result<Sides, EmuError> {
    if client_iface == server_iface {
        return Err(EmuError::Os(format!(
            "--client-side and --server-side are both {client_iface}: expected two different interfaces"
        )));
    }
    // SAFETY: a plain getter.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::Os("gateway mode needs root: packet sockets (CAP_NET_RAW), promiscuous mode and offload settings (CAP_NET_ADMIN)".into()));
    }
    for iface in [client_iface, server_iface] {
        check_interface(iface)?;
    }
    for iface in [client_iface, server_iface] {
        if let Some(pid) = gateway_on(iface) {
            return Err(EmuError::Os(format!(
                "interface {iface} is in use by another airlink gateway (pid {pid})"
            )));
        }
        restore_stale(iface);
    }
    let mut sides = Sides {
        client: packet_socket(client_iface)?,
        server: packet_socket(server_iface)?,
        mtu: u32::MAX,
        offloads: Offloads::default(),
    };
    for iface in [client_iface, server_iface] {
        let on = offloads_on(iface)?;
        std::fs::create_dir_all(STATE_DIR)
            .map_err(|e| EmuError::Os(format!("{STATE_DIR}: {e}")))?;
        std::fs::write(
            Saved::path(iface),
            format!("{}\n{}\n", this_process(), on.join(" ")),
        )
        .map_err(|e| EmuError::Os(format!("{}: {e}", Saved::path(iface).display())))?;
        sides.offloads.0.push(Saved {
            iface: iface.to_owned(),
            on: on.clone(),
        });
        set_offloads(iface, &on, false)?;
        sides.mtu = sides
            .mtu
            .min(read_sys(iface, "mtu")?.parse().unwrap_or(1500));
    }
    Ok(sides)
}

/// This process as a state file names it: "PID STARTTIME".
fn this_process() -> String {
    let pid = std::process::id() as i32;
    match start_time(pid) {
        Some(t) => format!("{pid} {t}"),
        None => pid.to_string(),
    }
}

/// A process's start time, in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: count from its closing one.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// When `path` was last written, in clock ticks since boot (the unit of a start time; 0
/// before this boot).
fn written_ticks(path: &std::path::Path) -> Option<u64> {
    let age = std::fs::metadata(path)
        .ok()?
        .modified()
        .ok()?
        .elapsed()
        .unwrap_or_default();
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec; plain getters.
    let (rc, hz) = unsafe {
        (
            libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut now),
            libc::sysconf(libc::_SC_CLK_TCK),
        )
    };
    if rc != 0 || hz <= 0 {
        return None;
    }
    // Written before this boot: before every process that runs now.
    let since_boot =
        std::time::Duration::new(now.tv_sec as u64, now.tv_nsec as u32).saturating_sub(age);
    Some((since_boot.as_secs_f64() * hz as f64) as u64)
}

/// The gateway a state file's first line names, if it still runs. "PID STARTTIME": that PID
/// with that start time (a PID is reused: the same PID started at another time is another
/// process). An older file's "PID" alone: that PID, if its process started before the file
/// was written (`written`, ticks since boot; unknown: it counts) — one started since cannot
/// have written it. `start_of` gives a live process's start time.
fn writer_alive(
    first_line: &str,
    written: Option<u64>,
    start_of: impl Fn(i32) -> Option<u64>,
) -> Option<i32> {
    let mut fields = first_line.split_whitespace();
    let pid: i32 = fields.next()?.parse().ok().filter(|&p| p > 0)?;
    let started = start_of(pid)?;
    let alive = match fields.next() {
        Some(t) => t.parse::<u64>().ok() == Some(started),
        None => written.is_none_or(|w| started <= w),
    };
    alive.then_some(pid)
}

/// The process of a running gateway on `iface`, from its state file.
fn gateway_on(iface: &str) -> Option<i32> {
    let path = Saved::path(iface);
    let text = std::fs::read_to_string(&path).ok()?;
    writer_alive(text.lines().next()?, written_ticks(&path), start_time)
}

/// Puts back the offloads a gateway killed on `iface` left off (its state file names them);
/// nothing when there is no state file or its gateway still runs. Returns what it restored.
pub fn restore_stale(iface: &str) -> Vec<String> {
    if gateway_on(iface).is_some() {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(Saved::path(iface)) else {
        return Vec::new();
    };
    let on: Vec<String> = text
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    Saved {
        iface: iface.to_owned(),
        on: on.clone(),
    }
    .restore();
    on
}

fn read_sys(iface: &str, what: &str) -> Result<String, EmuError> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/{what}"))
        .map(|s| s.trim().to_owned())
        .map_err(|e| EmuError::Os(format!("interface {iface}: cannot read its {what}: {e}")))
}

fn check_interface(iface: &str) -> Result<(), EmuError> {
    let exists = !iface.is_empty()
        && !iface.contains('/')
        && std::path::Path::new("/sys/class/net").join(iface).exists();
    if !exists {
        let mut known: Vec<String> = std::fs::read_dir("/sys/class/net")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        known.sort();
        return Err(EmuError::Os(format!(
            "no network interface named {iface:?}: expected one of {}",
            known.join(", ")
        )));
    }
    let flags =
        u32::from_str_radix(read_sys(iface, "flags")?.trim_start_matches("0x"), 16).unwrap_or(0);
    if flags & libc::IFF_UP as u32 == 0 {
        return Err(EmuError::Os(format!(
            "interface {iface} is down: bring it up first (ip link set {iface} up)"
        )));
    }
    Ok(())
}

fn ifindex(iface: &str) -> Result<i32, EmuError> {
    let name = std::ffi::CString::new(iface)
        .map_err(|_| EmuError::Os(format!("bad interface name {iface:?}")))?;
    // SAFETY: a valid NUL-terminated name.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(EmuError::Os(format!(
            "no network interface named {iface:?}"
        ))),
        i => Ok(i as i32),
    }
}

/// A non-blocking raw packet socket on `iface`: every frame in promiscuous mode, not the
/// frames it sends itself.
fn packet_socket(iface: &str) -> Result<OwnedFd, EmuError> {
    let index = ifindex(iface)?;
    let all = (libc::ETH_P_ALL as u16).to_be();
    let os = |what: &str| {
        EmuError::Os(format!(
            "{what} on {iface}: {}",
            std::io::Error::last_os_error()
        ))
    };
    // SAFETY: plain socket calls on a descriptor owned from creation on.
    let fd = new_fd(
        unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                all as i32,
            )
        },
        "packet socket",
    )
    .map_err(|e| EmuError::Os(format!("{e} (on {iface})")))?;
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = all;
    addr.sll_ifindex = index;
    // SAFETY: a valid address of the right size.
    if unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    } != 0
    {
        return Err(os("bind"));
    }
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = index;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    setsockopt(&fd, libc::PACKET_ADD_MEMBERSHIP, &mr).map_err(|_| os("promiscuous mode"))?;
    // Our own writes would come back as outgoing frames of the interface.
    const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
    setsockopt(&fd, PACKET_IGNORE_OUTGOING, &1i32)
        .map_err(|_| os("PACKET_IGNORE_OUTGOING (Linux 4.20 or later)"))?;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
        // SAFETY: a valid socket and an int option.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&(4i32 << 20) as *const i32).cast(),
                4,
            )
        };
    }
    Ok(fd)
}

fn setsockopt<T>(fd: &OwnedFd, opt: libc::c_int, value: &T) -> Result<(), ()> {
    // SAFETY: a valid socket and a value of the option's type.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(())
    }
}

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// One legacy ethtool call on `iface`: returns the value's data.
fn ethtool(iface: &str, cmd: u32, data: u32) -> std::io::Result<u32> {
    // SAFETY: a datagram socket only used for the ioctl, closed when dropped.
    let sock = new_fd(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) },
        "socket",
    )?;
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut value,
        _pad: [0; 16],
    };
    for (d, s) in req
        .name
        .iter_mut()
        .zip(iface.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: a valid socket and request whose data points at a live ethtool_value.
    if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(value.data)
}

/// The offloads that are on (among GRO, GSO, TSO, LRO); those the driver does not report count as off.
fn offloads_on(iface: &str) -> Result<Vec<String>, EmuError> {
    let mut on: Vec<String> = OFFLOADS
        .iter()
        .filter(|(_, get, _)| ethtool(iface, *get, 0).unwrap_or(0) != 0)
        .map(|(n, ..)| n.to_string())
        .collect();
    if ethtool(iface, ETHTOOL_GFLAGS, 0).unwrap_or(0) & ETH_FLAG_LRO != 0 {
        on.push("lro".into());
    }
    Ok(on)
}

/// Turns the named offloads on or off; an offload the driver cannot change is an error only
/// when turning it off (it would merge frames).
fn set_offloads(iface: &str, names: &[String], on: bool) -> Result<(), EmuError> {
    for name in names {
        let result = if name == "lro" {
            ethtool(iface, ETHTOOL_GFLAGS, 0).and_then(|flags| {
                let flags = if on {
                    flags | ETH_FLAG_LRO
                } else {
                    flags & !ETH_FLAG_LRO
                };
                ethtool(iface, ETHTOOL_SFLAGS, flags)
            })
        } else {
            let (_, _, set) = OFFLOADS
                .iter()
                .find(|(n, ..)| n == name)
                .expect("a known offload");
            ethtool(iface, *set, on as u32)
        };
        if let (Err(e), false) = (result, on) {
            return Err(EmuError::Os(format!(
                "cannot turn {name} off on {iface}: {e}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_is_stale_when_its_pid_now_names_another_process() {
        // PID 7 runs, started at tick 500.
        let start_of = |pid: i32| (pid == 7).then_some(500u64);
        assert_eq!(writer_alive("7 500", None, start_of), Some(7));
        assert_eq!(
            writer_alive("7 499", Some(1000), start_of),
            None,
            "another process has that PID now"
        );
        assert_eq!(
            writer_alive("8 500", None, start_of),
            None,
            "no such process"
        );
        // An older file names the PID alone: its process must have started before the file.
        assert_eq!(writer_alive("7", Some(600), start_of), Some(7));
        assert_eq!(
            writer_alive("7", Some(400), start_of),
            None,
            "started after the file was written"
        );
        assert_eq!(writer_alive("7", None, start_of), Some(7));
        for junk in ["", "x", "-1 5", "0"] {
            assert_eq!(writer_alive(junk, None, |_| Some(1)), None, "{junk:?}");
        }
    }

    #[test]
    fn this_process_is_named_by_its_pid_and_start_time() {
        let me = this_process();
        assert_eq!(
            writer_alive(&me, None, start_time),
            Some(std::process::id() as i32)
        );
        let (pid, t) = me.split_once(' ').unwrap();
        assert_eq!(
            writer_alive(
                &format!("{pid} {}", t.parse::<u64>().unwrap() + 1),
                None,
                start_time
            ),
            None
        );
    }
}
