//! A flow's two endpoints, whatever the protocol, behind one driver interface; and what its
//! application has seen. Data always flows from the server to the client.

use crate::metrics::FlowSample;
use airlink_engine::{Duration, Instant};
use airlink_transport::dccp::{DccpEndpoint, DccpEvent, DccpPacket};
use airlink_transport::udp::{IperfReceiver, UdpDatagram, UdpSender};
use airlink_transport::{Segment, TcpEndpoint, TcpEvent};

/// What a simulated packet carries: one protocol's header fields (payload as a byte count).
#[derive(Clone, Debug)]
pub enum Pdu {
    Tcp(Segment),
    Udp(UdpDatagram),
    Dccp(Box<DccpPacket>),
}

impl Pdu {
    /// Size of the IP packet, bytes.
    pub fn wire_len(&self) -> u32 {
        match self {
            Pdu::Tcp(s) => s.wire_len(),
            Pdu::Udp(d) => d.wire_len(),
            Pdu::Dccp(p) => p.wire_len(),
        }
    }
}

/// Which end of a flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// The endpoints of one flow. Built once per flow and never moved, so the variants' sizes
/// need not match.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Ends {
    Tcp { client: TcpEndpoint, server: TcpEndpoint },
    /// A media source at the server and iperf's accounting at the client.
    Udp { sender: UdpSender, receiver: IperfReceiver },
    /// DCCP endpoints; the client also keeps iperf's accounting of what DCCP delivered.
    Dccp { client: DccpEndpoint, server: DccpEndpoint, receiver: IperfReceiver },
}

/// A sender's transmission counters, for the summary.
#[derive(Default)]
pub(crate) struct SentCounts {
    pub packets: u64,
    pub data_packets: u64,
    pub retransmissions: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
}

/// What the driver must act on after an endpoint ran.
pub(crate) enum AppEvent {
    /// The server's application may start writing (TCP).
    Connected,
    /// Payload reached the client's application.
    Delivered(u64),
    /// The sender measured a round-trip time.
    RttSample(Duration),
}

impl Ends {
    /// The client opens the connection (UDP has none: its source runs on its own schedule).
    pub fn start(&mut self, now: Instant) {
        match self {
            Ends::Tcp { client, .. } => client.connect(now),
            Ends::Dccp { client, .. } => client.connect(now),
            Ends::Udp { .. } => {}
        }
    }

    /// A packet arrived at `side`; returns the payload bytes it handed to the application
    /// at once (UDP has no transport in between). Packets of another protocol cannot arrive
    /// (each flow has one), so they are ignored.
    pub fn handle(&mut self, side: Side, now: Instant, pdu: &Pdu) -> u64 {
        match (self, side, pdu) {
            (Ends::Tcp { client, .. }, Side::Client, Pdu::Tcp(s)) => client.handle_segment(now, s),
            (Ends::Tcp { server, .. }, Side::Server, Pdu::Tcp(s)) => server.handle_segment(now, s),
            (Ends::Udp { receiver, .. }, Side::Client, Pdu::Udp(d)) => {
                receiver.handle_datagram(now, d);
                return d.payload as u64;
            }
            (Ends::Dccp { client, .. }, Side::Client, Pdu::Dccp(p)) => client.handle_packet(now, p),
            (Ends::Dccp { server, .. }, Side::Server, Pdu::Dccp(p)) => server.handle_packet(now, p),
            _ => {}
        }
        0
    }

    pub fn poll_timeout(&self, side: Side) -> Option<Instant> {
        match (self, side) {
            (Ends::Tcp { client, .. }, Side::Client) => client.poll_timeout(),
            (Ends::Tcp { server, .. }, Side::Server) => server.poll_timeout(),
            (Ends::Udp { receiver, .. }, Side::Client) => receiver.poll_timeout(),
            (Ends::Udp { sender, .. }, Side::Server) => sender.poll_timeout(),
            (Ends::Dccp { client, receiver, .. }, Side::Client) => earliest(client.poll_timeout(), receiver.poll_timeout()),
            (Ends::Dccp { server, .. }, Side::Server) => server.poll_timeout(),
        }
    }

    /// Runs the side's timers that are due (a UDP source needs none: its datagrams are
    /// polled out when due).
    pub fn handle_timeout(&mut self, side: Side, now: Instant) {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        match (self, side) {
            (Ends::Tcp { client, .. }, Side::Client) if due(client.poll_timeout()) => client.handle_timeout(now),
            (Ends::Tcp { server, .. }, Side::Server) if due(server.poll_timeout()) => server.handle_timeout(now),
            (Ends::Udp { receiver, .. }, Side::Client) if due(receiver.poll_timeout()) => receiver.handle_timeout(now),
            (Ends::Dccp { client, receiver, .. }, Side::Client) => {
                if due(client.poll_timeout()) {
                    client.handle_timeout(now);
                }
                if due(receiver.poll_timeout()) {
                    receiver.handle_timeout(now);
                }
            }
            (Ends::Dccp { server, .. }, Side::Server) if due(server.poll_timeout()) => server.handle_timeout(now),
            _ => {}
        }
    }

    pub fn poll_transmit(&mut self, side: Side, now: Instant) -> Option<Pdu> {
        match (self, side) {
            (Ends::Tcp { client, .. }, Side::Client) => client.poll_transmit(now).map(Pdu::Tcp),
            (Ends::Tcp { server, .. }, Side::Server) => server.poll_transmit(now).map(Pdu::Tcp),
            (Ends::Udp { sender, .. }, Side::Server) => sender.poll_transmit(now).map(Pdu::Udp),
            (Ends::Udp { .. }, Side::Client) => None,
            (Ends::Dccp { client, .. }, Side::Client) => client.poll_transmit(now).map(|p| Pdu::Dccp(Box::new(p))),
            (Ends::Dccp { server, .. }, Side::Server) => server.poll_transmit(now).map(|p| Pdu::Dccp(Box::new(p))),
        }
    }

    /// The next event the driver must act on.
    pub fn poll_event(&mut self, side: Side, now: Instant) -> Option<AppEvent> {
        loop {
            let event = match (&mut *self, side) {
                (Ends::Tcp { client, .. }, Side::Client) => match client.poll_event()? {
                    TcpEvent::Delivered { bytes } => Some(AppEvent::Delivered(bytes)),
                    _ => None,
                },
                (Ends::Tcp { server, .. }, Side::Server) => match server.poll_event()? {
                    TcpEvent::Connected => Some(AppEvent::Connected),
                    TcpEvent::RttSample { rtt } => Some(AppEvent::RttSample(rtt)),
                    _ => None,
                },
                (Ends::Dccp { client, receiver, .. }, Side::Client) => match client.poll_event()? {
                    DccpEvent::Delivered { bytes, app, .. } => {
                        if let Some(h) = app {
                            receiver.record(now, h.id, h.sent_at, bytes);
                        }
                        Some(AppEvent::Delivered(bytes as u64))
                    }
                    _ => None,
                },
                (Ends::Dccp { server, .. }, Side::Server) => {
                    server.poll_event()?;
                    None
                }
                // The iperf receiver's totals are read directly; the UDP source has no events.
                (Ends::Udp { .. }, _) => return None,
            };
            if event.is_some() {
                return event;
            }
        }
    }

    /// What the sender transmitted.
    pub fn sent(&self) -> SentCounts {
        match self {
            Ends::Tcp { server, .. } => {
                let s = server.stats();
                SentCounts {
                    packets: s.segments_sent,
                    data_packets: s.data_segments_sent,
                    retransmissions: s.retransmitted_segments,
                    timeouts: s.timeouts,
                    fast_recoveries: s.fast_recoveries,
                }
            }
            Ends::Udp { sender, .. } => {
                let n = sender.stats().datagrams_sent;
                SentCounts { packets: n, data_packets: n, ..Default::default() }
            }
            Ends::Dccp { server, .. } => {
                let s = server.stats();
                SentCounts { packets: s.packets_sent, data_packets: s.data_packets_sent, ..Default::default() }
            }
        }
    }

    /// The sender's state for the time series.
    pub fn sample(&self) -> FlowSample {
        let us = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_nanos() as f64 / 1e3);
        let mut s = FlowSample {
            cwnd_bytes: f64::NAN,
            ssthresh_bytes: f64::NAN,
            inflight_bytes: f64::NAN,
            rate_bps: f64::NAN,
            loss_event_rate: f64::NAN,
            srtt_us: f64::NAN,
            rto_us: f64::NAN,
            losses: 0,
            sack_ok: -1,
            congestion_distance_segments: f64::NAN,
            backlog_segments: f64::NAN,
        };
        match self {
            Ends::Tcp { server, .. } => {
                s.cwnd_bytes = server.cwnd() as f64;
                // An unset ssthresh is "infinite": NaN keeps plots readable.
                s.ssthresh_bytes = Some(server.ssthresh()).filter(|t| *t < u64::MAX / 4).map_or(f64::NAN, |t| t as f64);
                s.inflight_bytes = server.bytes_in_flight() as f64;
                s.srtt_us = us(server.srtt());
                s.rto_us = us(Some(server.rto()));
                s.losses = server.stats().retransmitted_segments;
                let probe = server.controller().probe();
                s.sack_ok = probe.sack_ok.map_or(-1, i64::from);
                s.congestion_distance_segments = probe.congestion_distance.unwrap_or(f64::NAN);
                s.backlog_segments = probe.backlog_segments.unwrap_or(f64::NAN);
            }
            Ends::Dccp { server, client, .. } => {
                let c = server.ccid_state();
                let size = server.config().packet_size as f64;
                s.cwnd_bytes = c.cwnd.map_or(f64::NAN, |w| w as f64 * size);
                s.ssthresh_bytes = c.ssthresh.map_or(f64::NAN, |w| w as f64 * size);
                s.inflight_bytes = c.pipe.map_or(f64::NAN, |w| w as f64 * size);
                s.rate_bps = c.rate_bps.unwrap_or(f64::NAN);
                s.loss_event_rate = c.p.unwrap_or(f64::NAN);
                s.srtt_us = us(c.rtt);
                // CCID-2's sender finds losses itself; with CCID-3 only the receiver knows.
                s.losses = c.lost_packets.max(client.stats().reported_lost());
            }
            Ends::Udp { receiver, .. } => s.losses = receiver.totals().lost,
        }
        s
    }

    /// iperf's accounting at the client, for UDP and DCCP.
    pub fn receiver(&self) -> Option<&IperfReceiver> {
        match self {
            Ends::Udp { receiver, .. } | Ends::Dccp { receiver, .. } => Some(receiver),
            Ends::Tcp { .. } => None,
        }
    }

    pub fn receiver_mut(&mut self) -> Option<&mut IperfReceiver> {
        match self {
            Ends::Udp { receiver, .. } | Ends::Dccp { receiver, .. } => Some(receiver),
            Ends::Tcp { .. } => None,
        }
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
