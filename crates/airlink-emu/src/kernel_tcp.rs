//! The kernel's TCP seen from inside an emulation: every `[emulation] tcp_info_interval`
//! (10 ms by default) the TCP connections of both namespaces are listed with their
//! `TCP_INFO` through sock_diag netlink (what `ss -tin` shows, read as the kernel's binary
//! structure rather than as text) and written to the `flows` table under the column names of
//! airlink's own TCP where the meaning is the same, so a simulated and an emulated run of one
//! scenario overlay in `airlink plot` and `airlink top` shows the kernel's cwnd and RTT.
//!
//! Threads and namespaces: a netlink socket belongs to the network namespace it was created
//! in, so each namespace's socket is created by [`Namespace::within`] (a thread that ends with
//! the call) and the sampler thread itself never calls `setns`. The sampler only reads the
//! kernel's state: it never touches the datapath's thread, its packets or its clock.
//!
//! Which socket is a flow's: the scenario's flows are told apart by their server port
//! (`flow.N.port`, as the datapath routes them); a connection on no flow's port is counted
//! with flow 0, whose paths it takes. Of the two ends of a connection, the one that has sent
//! more than it received is sampled (the sender, as the simulator samples its server); a
//! connection carries its client port in the `connection` column, so iperf3's control
//! connection and each of its parallel streams stay apart.
//!
//! | column | from `struct tcp_info` (`include/uapi/linux/tcp.h`) |
//! |---|---|
//! | `delivered_bytes` | `tcpi_bytes_acked` (RFC 4898 ThruOctetsAcked), less the SYN's 1 at the client's end, which opened the connection |
//! | `cwnd_bytes`, `ssthresh_bytes` | `tcpi_snd_cwnd`, `tcpi_snd_ssthresh` × `tcpi_snd_mss`; NaN while ssthresh is "infinite" |
//! | `inflight_bytes` | (`unacked` − `sacked` − `lost` + `retrans`) × `snd_mss`, the kernel's `tcp_packets_in_flight` |
//! | `srtt_us`, `rttvar_us`, `min_rtt_us`, `rto_us` | `tcpi_rtt`, `tcpi_rttvar`, `tcpi_min_rtt`, `tcpi_rto` |
//! | `retransmissions` | `tcpi_total_retrans` (segments retransmitted over the connection's life) |
//! | `spurious_retransmissions` | `tcpi_dsack_dups`: duplicates the receiver reported by D-SACK |
//! | `pacing_rate_bps`, `delivery_rate_bps` | `tcpi_pacing_rate`, `tcpi_delivery_rate` (bytes/s) × 8; the kernel paces whole packets, airlink's column counts payload |
//! | `bytes_acked`, `bytes_retransmitted`, `lost_segments` | `tcpi_bytes_acked`, `tcpi_bytes_retrans`, `tcpi_lost` (marked lost now) |
//!
//! Deviations from airlink's own `flows` rows: `timeouts` and `fast_recoveries` are 0 (the
//! structure has no such totals in the library's layout), `link_losses` is −1 (the datapath
//! does not attribute its drops to connections), `rate_bps`, `loss_event_rate` and the
//! controller probes are NaN or −1 as for airlink's TCP.

use crate::ns::{Namespace, NsError};
use airlink_net::metrics::{Column, Table};
use airlink_transport::Role;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::nlas::{Nla, TcpInfo};
use netlink_packet_sock_diag::inet::{
    ExtensionFlags, InetRequest, InetResponse, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use netlink_sys::{Socket, SocketAddr};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The kernel's "no threshold yet" (`TCP_INFINITE_SSTHRESH`).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Rows held until drained (a drain comes every 0.5 s; 10 connections sampled every 10 ms
/// make 2,000 rows a second); rows beyond are counted as lost.
pub const MAX_ROWS: usize = 1 << 18;

/// One connection's sender at one instant, in the `flows` table's units.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTcpRow {
    pub time_ns: u64,
    pub flow: u32,
    pub side: Role,
    /// The client's port of the connection.
    pub connection: u16,
    pub delivered_bytes: u64,
    pub cwnd_bytes: f64,
    pub ssthresh_bytes: f64,
    pub inflight_bytes: f64,
    pub srtt_us: f64,
    pub rttvar_us: f64,
    pub min_rtt_us: f64,
    pub rto_us: f64,
    pub retransmissions: u64,
    pub spurious_retransmissions: u64,
    pub pacing_rate_bps: f64,
    pub delivery_rate_bps: f64,
    pub bytes_acked: u64,
    pub bytes_retransmitted: u64,
    pub lost_segments: u64,
}

/// The flow a connection plays: the scenario's flow on its server port, else flow 0.
/// `ports` maps server ports to flow indices, as the datapath's list does.
pub fn flow_of(side: Role, id: &SocketId, ports: &[(u16, u16)]) -> (u32, u16) {
    let (server_port, client_port) = match side {
        Role::Server => (id.source_port, id.destination_port),
        Role::Client => (id.destination_port, id.source_port),
    };
    let flow = ports
        .iter()
        .find(|(p, _)| *p == server_port)
        .map_or(0, |(_, f)| *f as u32);
    (flow, client_port)
}

/// The row of a sending socket's `TCP_INFO`; `None` for a socket that has sent no more data
/// than it received (the receiving end, whose peer's row describes the connection, or a
/// connection that has carried no data yet).
pub fn row(
    time_ns: u64,
    side: Role,
    flow: u32,
    connection: u16,
    i: &TcpInfo,
) -> Option<KernelTcpRow> {
    if i.bytes_sent <= i.bytes_received {
        return None;
    }
    let mss = i.snd_mss as f64;
    let in_flight = (i.unacked as i64 - i.sacked as i64 - i.lost as i64 + i.retrans as i64).max(0);
    Some(KernelTcpRow {
        time_ns,
        flow,
        side,
        connection,
        // The SYN takes one sequence number: it counts in bytes_acked at the end that opened
        // the connection (the client's); the end that accepted it starts past its SYN.
        delivered_bytes: match side {
            Role::Client => i.bytes_acked.saturating_sub(1),
            Role::Server => i.bytes_acked,
        },
        cwnd_bytes: i.snd_cwnd as f64 * mss,
        ssthresh_bytes: if i.snd_ssthresh >= INFINITE_SSTHRESH {
            f64::NAN
        } else {
            i.snd_ssthresh as f64 * mss
        },
        inflight_bytes: in_flight as f64 * mss,
        srtt_us: i.rtt as f64,
        rttvar_us: i.rttvar as f64,
        min_rtt_us: if i.min_rtt == u32::MAX {
            f64::NAN
        } else {
            i.min_rtt as f64
        },
        rto_us: i.rto as f64,
        retransmissions: i.total_retrans as u64,
        spurious_retransmissions: i.dsack_dups as u64,
        pacing_rate_bps: if i.pacing_rate == u64::MAX {
            f64::NAN
        } else {
            i.pacing_rate as f64 * 8.0
        },
        delivery_rate_bps: i.delivery_rate as f64 * 8.0,
        bytes_acked: i.bytes_acked,
        bytes_retransmitted: i.bytes_retrans,
        lost_segments: i.lost as u64,
    })
}

/// The rows of one dump's responses: sockets whose peer is `peer` (the other namespace),
/// that carry `TCP_INFO` and have sent more than they received.
pub fn rows_of(
    time_ns: u64,
    side: Role,
    peer: IpAddr,
    ports: &[(u16, u16)],
    responses: &[InetResponse],
) -> Vec<KernelTcpRow> {
    responses
        .iter()
        // A dual-stack listener's connections are IPv6 sockets with IPv4-mapped addresses.
        .filter(|r| r.header.socket_id.destination_address.to_canonical() == peer)
        .filter_map(|r| {
            let info = r.nlas.iter().find_map(|n| match n {
                Nla::TcpInfo(i) => Some(i),
                _ => None,
            })?;
            let (flow, connection) = flow_of(side, &r.header.socket_id, ports);
            row(time_ns, side, flow, connection, info)
        })
        .collect()
}

/// Why a dump failed.
#[derive(Debug)]
pub enum DumpError {
    /// The netlink socket refused a send or a receive.
    Os(std::io::Error),
    /// The kernel's answer did not parse (a layout the library does not know).
    Malformed(String),
    /// The kernel answered the request with an error code.
    Refused(i32),
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DumpError::Os(e) => write!(f, "sock_diag netlink: {e}"),
            DumpError::Malformed(m) => write!(f, "sock_diag netlink: malformed answer: {m}"),
            DumpError::Refused(code) => write!(f, "sock_diag netlink: the kernel answered {code}"),
        }
    }
}

/// The request: every TCP socket of `family` that has a connection (not listening, not in
/// TIME_WAIT, which has no `TCP_INFO`), with `TCP_INFO`.
fn request(family: u8, sequence: u32) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = sequence;
    let mut packet = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO,
            states: StateFlags::ESTABLISHED
                | StateFlags::FIN_WAIT1
                | StateFlags::FIN_WAIT2
                | StateFlags::CLOSE_WAIT
                | StateFlags::LAST_ACK
                | StateFlags::CLOSING,
            socket_id: if family == AF_INET6 {
                SocketId::new_v6()
            } else {
                SocketId::new_v4()
            },
        })
        .into(),
    );
    packet.finalize();
    let mut buf = vec![0; packet.buffer_len()];
    packet.serialize(&mut buf);
    buf
}

/// Splits the datagrams of a dump's answer into its responses; `Ok(true)` once the answer is
/// complete (NLMSG_DONE).
pub fn parse_answer(datagram: &[u8], out: &mut Vec<InetResponse>) -> Result<bool, DumpError> {
    let mut at = 0;
    while at < datagram.len() {
        let m = NetlinkMessage::<SockDiagMessage>::deserialize(&datagram[at..])
            .map_err(|e| DumpError::Malformed(e.to_string()))?;
        let len = m.header.length as usize;
        match m.payload {
            NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => out.push(*r),
            NetlinkPayload::Done(_) => return Ok(true),
            NetlinkPayload::Error(e) => {
                return Err(DumpError::Refused(e.code.map_or(0, |c| c.get())))
            }
            _ => {}
        }
        if len == 0 {
            break;
        }
        // Messages are 4-byte aligned in a datagram.
        at += (len + 3) & !3;
    }
    Ok(false)
}

/// Lists the TCP sockets of the namespace `socket` was created in, IPv4 and IPv6 (a
/// dual-stack listener such as iperf3's accepts IPv4 connections as IPv6 sockets).
fn dump(
    socket: &Socket,
    sequence: &mut u32,
    buf: &mut [u8],
    out: &mut Vec<InetResponse>,
) -> Result<(), DumpError> {
    for family in [AF_INET, AF_INET6] {
        *sequence = sequence.wrapping_add(1);
        socket
            .send(&request(family, *sequence), 0)
            .map_err(DumpError::Os)?;
        loop {
            let n = socket.recv(&mut &mut buf[..], 0).map_err(DumpError::Os)?;
            if parse_answer(&buf[..n.min(buf.len())], out)? {
                break;
            }
        }
    }
    Ok(())
}

/// A netlink socket for sock_diag in namespace `ns`.
fn open(ns: &Namespace) -> Result<Socket, NsError> {
    ns.within(|| {
        let label = ns.label;
        let err = |e: std::io::Error| {
            NsError(format!(
                "sock_diag netlink socket in the {label} namespace: {e}"
            ))
        };
        let mut s = Socket::new(NETLINK_SOCK_DIAG).map_err(err)?;
        s.bind_auto().map_err(err)?;
        s.connect(&SocketAddr::new(0, 0)).map_err(err)?;
        Ok(s)
    })
}

/// A flow's kernel connection now, for the live state (`airlink top`): the one that has
/// acknowledged the most bytes so far (the bulk transfer, not iperf3's control connection).
#[derive(Clone, Debug, Serialize)]
pub struct KernelFlowState {
    pub connection: u16,
    pub delivered_bytes: u64,
    pub cwnd_bytes: f64,
    /// The pacing rate, bit/s.
    pub rate_bps: f64,
    pub srtt_ms: f64,
    pub retransmissions: u64,
}

/// The latest state per flow, shared with the control socket.
pub type Latest = Arc<Mutex<BTreeMap<u32, KernelFlowState>>>;

/// Rows sampled and not yet drained.
#[derive(Default)]
struct Rows {
    rows: Vec<KernelTcpRow>,
    lost: u64,
    errors: Vec<String>,
}

/// The sampler thread of one emulation.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    rows: Arc<Mutex<Rows>>,
}

/// What the sampler needs besides the namespaces.
pub struct SamplerConfig {
    pub interval_ns: u64,
    /// Monotonic time of the emulation's instant zero.
    pub origin_mono_ns: u64,
    /// Server port → flow index.
    pub ports: Vec<(u16, u16)>,
}

impl Sampler {
    /// Opens a sock_diag socket in each namespace and starts sampling; `sides` gives each
    /// namespace with the address of its peer.
    pub fn start(
        sides: [(Role, &Namespace, IpAddr); 2],
        cfg: SamplerConfig,
        latest: Latest,
    ) -> Result<Sampler, NsError> {
        let sockets = sides
            .iter()
            .map(|(side, ns, peer)| Ok((*side, open(ns)?, *peer)))
            .collect::<Result<Vec<_>, NsError>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let rows = Arc::new(Mutex::new(Rows::default()));
        let thread = {
            let (stop, rows) = (stop.clone(), rows.clone());
            std::thread::Builder::new()
                .name("airlink-tcpinfo".into())
                .spawn(move || sample(sockets, cfg, stop, rows, latest))
                .map_err(|e| NsError(format!("cannot start the TCP_INFO sampler thread: {e}")))?
        };
        Ok(Sampler {
            stop,
            thread: Some(thread),
            rows,
        })
    }

    /// Stops sampling (the last rows stay to be drained).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Rows lost because [`MAX_ROWS`] waited to be drained, and the first errors met.
    pub fn report(&self) -> (u64, Vec<String>) {
        let r = self.rows.lock().unwrap_or_else(|p| p.into_inner());
        (r.lost, r.errors.clone())
    }

    /// The rows sampled since the last drain, as the `flows` table.
    pub fn drain(&self) -> Table {
        let rows = std::mem::take(&mut self.rows.lock().unwrap_or_else(|p| p.into_inner()).rows);
        table(&rows)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `flows` table of kernel rows: airlink's columns first, then what only the kernel has.
pub fn table(rows: &[KernelTcpRow]) -> Table {
    let u = |f: fn(&KernelTcpRow) -> u64| Column::U64(rows.iter().map(f).collect());
    let x = |f: fn(&KernelTcpRow) -> f64| Column::F64(rows.iter().map(f).collect());
    let n = rows.len();
    Table {
        columns: vec![
            ("time_ns", u(|r| r.time_ns)),
            ("flow", u(|r| r.flow as u64)),
            ("delivered_bytes", u(|r| r.delivered_bytes)),
            ("cwnd_bytes", x(|r| r.cwnd_bytes)),
            ("ssthresh_bytes", x(|r| r.ssthresh_bytes)),
            ("inflight_bytes", x(|r| r.inflight_bytes)),
            ("rate_bps", Column::F64(vec![f64::NAN; n])),
            ("loss_event_rate", Column::F64(vec![f64::NAN; n])),
            ("srtt_us", x(|r| r.srtt_us)),
            ("rto_us", x(|r| r.rto_us)),
            ("retransmissions", u(|r| r.retransmissions)),
            (
                "spurious_retransmissions",
                u(|r| r.spurious_retransmissions),
            ),
            ("timeouts", Column::U64(vec![0; n])),
            ("fast_recoveries", Column::U64(vec![0; n])),
            ("link_losses", Column::I64(vec![-1; n])),
            ("detected_losses", Column::U64(vec![0; n])),
            ("sack_ok", Column::I64(vec![-1; n])),
            (
                "congestion_distance_segments",
                Column::F64(vec![f64::NAN; n]),
            ),
            ("backlog_segments", Column::F64(vec![f64::NAN; n])),
            ("pacing_rate_bps", x(|r| r.pacing_rate_bps)),
            ("rttvar_us", x(|r| r.rttvar_us)),
            ("min_rtt_us", x(|r| r.min_rtt_us)),
            ("delivery_rate_bps", x(|r| r.delivery_rate_bps)),
            ("bytes_acked", u(|r| r.bytes_acked)),
            ("bytes_retransmitted", u(|r| r.bytes_retransmitted)),
            ("lost_segments", u(|r| r.lost_segments)),
            ("connection", u(|r| r.connection as u64)),
            (
                "side",
                Column::Str(rows.iter().map(|r| r.side.as_str()).collect()),
            ),
        ],
    }
}

/// The sampler's loop: a dump of each namespace at every tick of the interval on the
/// emulation's clock; a late tick is taken once, not caught up.
fn sample(
    sockets: Vec<(Role, Socket, IpAddr)>,
    cfg: SamplerConfig,
    stop: Arc<AtomicBool>,
    rows: Arc<Mutex<Rows>>,
    latest: Latest,
) {
    let mut buf = vec![0u8; 1 << 16];
    let mut responses = Vec::new();
    let mut sequence = 0u32;
    let interval = cfg.interval_ns.max(1);
    let mut next = crate::timing::monotonic_ns();
    while !stop.load(Ordering::Relaxed) {
        let now = crate::timing::monotonic_ns();
        if now < next {
            // Short naps, so that a stop is seen within 10 ms.
            let nap = (next - now).min(10_000_000);
            std::thread::sleep(std::time::Duration::from_nanos(nap));
            continue;
        }
        let time_ns = now.saturating_sub(cfg.origin_mono_ns);
        let mut found = Vec::new();
        for (side, socket, peer) in &sockets {
            responses.clear();
            match dump(socket, &mut sequence, &mut buf, &mut responses) {
                Ok(()) => found.extend(rows_of(time_ns, *side, *peer, &cfg.ports, &responses)),
                Err(e) => {
                    let mut r = rows.lock().unwrap_or_else(|p| p.into_inner());
                    if r.errors.len() < 10 {
                        r.errors.push(format!("{} namespace: {e}", side.as_str()));
                    }
                }
            }
        }
        update_latest(&latest, &found);
        {
            let mut r = rows.lock().unwrap_or_else(|p| p.into_inner());
            if r.rows.len() + found.len() > MAX_ROWS {
                r.lost += found.len() as u64;
            } else {
                r.rows.append(&mut found);
            }
        }
        next += interval * ((now - next) / interval + 1);
    }
}

/// Per flow, the connection that has acknowledged the most bytes so far (it stays when it
/// closes: iperf3's control connection outlives its data connection).
fn update_latest(latest: &Latest, rows: &[KernelTcpRow]) {
    let mut best: BTreeMap<u32, &KernelTcpRow> = BTreeMap::new();
    for r in rows {
        let e = best.entry(r.flow).or_insert(r);
        if r.bytes_acked > e.bytes_acked {
            *e = r;
        }
    }
    let mut l = latest.lock().unwrap_or_else(|p| p.into_inner());
    for (flow, r) in best {
        if l.get(&flow)
            .is_some_and(|k| k.connection != r.connection && k.delivered_bytes > r.delivered_bytes)
        {
            continue;
        }
        l.insert(
            flow,
            KernelFlowState {
                connection: r.connection,
                delivered_bytes: r.delivered_bytes,
                cwnd_bytes: r.cwnd_bytes,
                rate_bps: r.pacing_rate_bps,
                srtt_ms: r.srtt_us / 1e3,
                retransmissions: r.retransmissions,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded answer of this machine's kernel (6.18) to [`request`] in a namespace holding
    /// one loopback connection on port 5301 after the accepting end sent 300,000 bytes.
    const ANSWER: &[u8] = include_bytes!("../testdata/inet_diag_tcp_answer.bin");

    #[test]
    fn a_recorded_answer_maps_to_one_sender_row() {
        let mut responses = Vec::new();
        assert!(
            parse_answer(ANSWER, &mut responses).unwrap(),
            "ends with NLMSG_DONE"
        );
        assert_eq!(responses.len(), 2, "both ends of the connection");
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let rows = rows_of(7, Role::Server, peer, &[(5301, 3)], &responses);
        // The receiving end (it sent nothing) has no row.
        assert_eq!(rows.len(), 1, "{rows:?}");
        let r = &rows[0];
        // The values of the message (as `ss -tin` would print them: mss:65483 cwnd:18
        // rtt:0.026/0.029 minrtt:0.002 rto:204 bytes_acked:300000 pacing_rate 998 Gbps
        // delivery_rate 262 Gbps); ssthresh not yet set.
        assert_eq!(
            (r.time_ns, r.flow, r.side, r.connection),
            (7, 3, Role::Server, 35234)
        );
        assert_eq!(r.cwnd_bytes, 18.0 * 65483.0);
        assert!(r.ssthresh_bytes.is_nan());
        assert_eq!(r.inflight_bytes, 0.0);
        assert_eq!(
            (r.srtt_us, r.rttvar_us, r.min_rtt_us, r.rto_us),
            (26.0, 29.0, 2.0, 204_000.0)
        );
        assert_eq!((r.delivered_bytes, r.bytes_acked), (300_000, 300_000));
        assert_eq!(r.pacing_rate_bps, 124_760_455_141.0 * 8.0);
        assert_eq!(r.delivery_rate_bps, 32_741_500_000.0 * 8.0);
        assert_eq!(
            (r.retransmissions, r.bytes_retransmitted, r.lost_segments),
            (0, 0, 0)
        );
        // Another namespace's peer: not this emulation's connection.
        let other: IpAddr = "10.77.0.2".parse().unwrap();
        assert!(rows_of(7, Role::Server, other, &[(5301, 3)], &responses).is_empty());
    }

    #[test]
    fn a_connection_takes_its_server_ports_flow_else_flow_0() {
        let mut id = SocketId::new_v4();
        (id.source_port, id.destination_port) = (40000, 5201);
        let ports = [(5301, 1), (5201, 2)];
        assert_eq!(flow_of(Role::Client, &id, &ports), (2, 40000));
        (id.source_port, id.destination_port) = (5201, 40000);
        assert_eq!(flow_of(Role::Server, &id, &ports), (2, 40000));
        assert_eq!(flow_of(Role::Server, &id, &[]), (0, 40000));
    }

    #[test]
    fn the_table_has_airlinks_flow_columns_first() {
        let mut responses = Vec::new();
        parse_answer(ANSWER, &mut responses).unwrap();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let t = table(&rows_of(0, Role::Server, peer, &[], &responses));
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| *n).collect();
        let sim = airlink_net::metrics::Recorder::default().drain();
        let flows = &sim.iter().find(|(n, _)| *n == "flows").unwrap().1;
        let sim_names: Vec<&str> = flows.columns.iter().map(|(n, _)| *n).collect();
        assert_eq!(&names[..sim_names.len()], &sim_names[..]);
        assert_eq!(t.rows(), 1);
    }
}
