//! A flow's two endpoints, whatever the protocol, behind one driver interface; and what its
//! application has seen. Data always flows from the server to the client.
//!
//! Both drivers run flows through [`Flow`]: the simulator in virtual time, and the emulator's
//! real-time stack (airlink's own transports over UDP sockets in network namespaces).

use crate::host_budget::{EndBudget, HostBudget};
use crate::metrics::{FlowSample, Recorder};
use crate::summary::{EcnSummary, FlowSummary, IperfSummary};
use airlink_engine::{Duration, Instant};
use airlink_transport::dccp::{DccpEndpoint, DccpEvent};
use airlink_transport::udp::{IperfReceiver, UdpSender};
use airlink_transport::{Pdu, Role, TcpEndpoint, TcpEvent};

/// One flow: its two endpoints and what its application has seen.
pub struct Flow {
    /// The scenario's name for it, if any.
    pub name: Option<String>,
    pub(crate) ends: Ends,
    pub start: Instant,
    /// When the source stops (the flow's `stop`), until it has. TCP's application stops
    /// writing then; UDP and DCCP sources stop by themselves, and the instant is only logged.
    stop: Option<Instant>,
    /// Starts and stops not yet written to the event log.
    unlogged: Vec<(Instant, crate::EventKind)>,
    /// Each end's share of its host's service budget, if the host has one: client, server.
    budgets: [Option<EndBudget>; 2],
    /// Bytes the application transfers; `None`: as many as it can until the stop time.
    pub bytes: Option<u64>,
    pub delivered: u64,
    pub first_delivery: Option<Instant>,
    pub last_delivery: Option<Instant>,
    /// (time, delivered) when delivery first reached 10 % and 90 % of `bytes`.
    mark10: Option<(Instant, u64)>,
    mark90: Option<(Instant, u64)>,
    pub done: bool,
    pub checksum_drops: u64,
    /// The flow's packets links dropped (queue, random loss), either direction; `None` where
    /// nobody counts them (emulation reuses `Flow` without attributing drops to flows).
    pub link_drops: Option<u64>,
    pub protocol: &'static str,
    pub congestion: &'static str,
}

impl Flow {
    pub(crate) fn new(
        ends: Ends,
        start: Instant,
        bytes: Option<u64>,
        protocol: &'static str,
        congestion: &'static str,
    ) -> Flow {
        Flow {
            name: None,
            stop: None,
            unlogged: Vec::new(),
            budgets: [None, None],
            ends,
            start,
            bytes,
            delivered: 0,
            first_delivery: None,
            last_delivery: None,
            mark10: None,
            mark90: None,
            done: bytes == Some(0),
            checksum_drops: 0,
            link_drops: None,
            protocol,
            congestion,
        }
    }

    /// The client opens the connection (UDP has none: its source runs on its own schedule).
    pub fn start_at(&mut self, now: Instant) {
        self.unlogged.push((now, crate::EventKind::FlowStart));
        self.ends.start(now);
    }

    /// A packet arrived intact at `side`. Returns true when it completed the flow.
    pub fn receive(&mut self, side: Role, now: Instant, pdu: &Pdu) -> bool {
        // A host with a budget pays for what it receives (data, ACKs, feedback).
        if let Some(b) = &self.budgets[side as usize] {
            b.charge_received(now);
        }
        let bytes = self.ends.handle(side, now, pdu);
        bytes > 0 && self.deliver(now, bytes)
    }

    /// The source stops at `at`; for TCP, the application stops writing (what it sent is
    /// still delivered, then the connection closes). The server's timer carries it, so both
    /// drivers apply it in the order of endpoint wake-ups.
    pub fn stop_at(&mut self, at: Instant) {
        self.stop = Some(at);
    }

    /// `side`'s host serves its packets through `budget`, shared with the host's other flows:
    /// a UDP datagram that finds it full is dropped there, TCP and DCCP wait for room.
    /// `places`: how many packets of this end the host holds at most.
    pub fn share_host_budget(&mut self, side: Role, budget: &HostBudget, places: usize) {
        self.budgets[side as usize] = Some(EndBudget::new(budget, places));
    }

    pub fn poll_timeout(&self, side: Role) -> Option<Instant> {
        let stop = self.stop.filter(|_| side == Role::Server);
        let endpoint = self.ends.poll_timeout(side);
        match &self.budgets[side as usize] {
            Some(b) => {
                let blocks = !matches!(self.ends, Ends::Udp { .. });
                earliest(b.poll_timeout(blocks, endpoint), stop)
            }
            None => earliest(endpoint, stop),
        }
    }

    pub fn handle_timeout(&mut self, side: Role, now: Instant) {
        if side == Role::Server && self.stop.is_some_and(|t| t <= now) {
            self.stop = None;
            self.unlogged.push((now, crate::EventKind::FlowStop));
            if let Ends::Tcp { server, .. } = &mut self.ends {
                server.stop(now);
            }
        }
        self.ends.handle_timeout(side, now)
    }

    /// The next packet that leaves `side`'s host at `now`.
    pub fn poll_transmit(&mut self, side: Role, now: Instant) -> Option<Pdu> {
        let ends = &mut self.ends;
        let Some(b) = self.budgets[side as usize].as_mut() else {
            return ends.poll_transmit(side, now);
        };
        // UDP hands over every datagram that is due (the host drops what does not fit); TCP and
        // DCCP only while the host has room.
        let udp = matches!(ends, Ends::Udp { .. });
        b.transmit(now, udp, || ends.poll_transmit(side, now))
    }

    /// Payload reached the client's application. Returns true when it completed the flow.
    fn deliver(&mut self, now: Instant, bytes: u64) -> bool {
        self.delivered += bytes;
        self.first_delivery.get_or_insert(now);
        self.last_delivery = Some(now);
        let Some(total) = self.bytes else {
            return false;
        };
        if self.mark10.is_none() && self.delivered * 10 >= total {
            self.mark10 = Some((now, self.delivered));
        }
        if self.mark90.is_none() && self.delivered * 10 >= total * 9 {
            self.mark90 = Some((now, self.delivered));
        }
        if self.delivered >= total && !self.done {
            self.done = true;
            return true;
        }
        false
    }

    /// The application's reactions to the transport events of `side`: once connected the
    /// server writes the whole transfer and closes; deliveries are counted; RTT samples and
    /// iperf's interval reports go to `rec` when it records. Returns true when the flow
    /// completed.
    pub fn react(&mut self, id: u32, side: Role, now: Instant, rec: &mut Recorder) -> bool {
        let mut completed = false;
        for (at, kind) in self.unlogged.drain(..) {
            if rec.enabled {
                rec.events.push(at, kind, "", id, 0, 0);
            }
        }
        while let Some(ev) = self.ends.poll_event(side, now) {
            match ev {
                AppEvent::Connected => {
                    if let Ends::Tcp { server, .. } = &mut self.ends {
                        match self.bytes {
                            Some(bytes) => {
                                server.send(now, bytes);
                                server.close(now);
                            }
                            None => server.send(now, u64::MAX / 2),
                        }
                    }
                }
                AppEvent::Delivered(bytes) => completed |= self.deliver(now, bytes),
                AppEvent::RttSample(rtt) if rec.enabled => {
                    rec.rtt.time_ns.push(now.as_nanos());
                    rec.rtt.flow.push(id as u64);
                    rec.rtt.rtt_us.push(rtt.as_nanos() as f64 / 1e3);
                }
                AppEvent::RttSample(_) => {}
            }
        }
        if rec.enabled {
            if let Some(receiver) = self.ends.receiver_mut() {
                while let Some(r) = receiver.poll_report() {
                    rec.intervals.push(id, &r);
                }
            }
        }
        completed
    }

    /// The sender's state for the time series.
    pub fn sample(&self) -> FlowSample {
        let mut s = self.ends.sample();
        s.link_losses = self.link_losses().map_or(-1, |n| n as i64);
        s
    }

    /// Packets lost on links: dropped there, or delivered corrupted and caught by the
    /// receiver's checksum.
    pub fn link_losses(&self) -> Option<u64> {
        self.link_drops.map(|d| d + self.checksum_drops)
    }

    /// Complete: a flow with a size delivered all its bytes; a flow without one (it runs to
    /// the stop time) delivered data. A flow that delivered nothing did not complete.
    pub fn completed(&self) -> bool {
        self.done || (self.bytes.is_none() && self.delivered > 0)
    }

    pub fn summary(&self, id: u32) -> FlowSummary {
        let sent = self.ends.sent();
        let end = self.last_delivery;
        let duration = end.map(|e| e.saturating_since(self.start).as_secs_f64());
        let steady = match (self.mark10, self.mark90) {
            (Some((t1, b1)), Some((t2, b2))) if t2 > t1 => {
                Some((b2 - b1) as f64 * 8.0 / (t2 - t1).as_secs_f64())
            }
            _ => None,
        };
        FlowSummary {
            id,
            name: self.name.clone(),
            protocol: self.protocol,
            congestion: self.congestion,
            bytes_requested: self.bytes,
            bytes_delivered: self.delivered,
            completed: self.completed(),
            start_s: self.start.as_secs_f64(),
            end_s: end.map(|e| e.as_secs_f64()),
            duration_s: duration,
            goodput_bps: duration
                .filter(|d| *d > 0.0)
                .map(|d| self.delivered as f64 * 8.0 / d),
            goodput_steady_bps: steady,
            segments_sent: sent.packets,
            data_segments_sent: sent.data_packets,
            link_losses: self.link_losses(),
            retransmissions: sent.retransmissions,
            spurious_retransmissions: sent.spurious_retransmissions,
            retransmission_pct: if sent.data_packets == 0 {
                0.0
            } else {
                100.0 * sent.retransmissions as f64 / sent.data_packets as f64
            },
            timeouts: sent.timeouts,
            fast_recoveries: sent.fast_recoveries,
            checksum_drops: self.checksum_drops,
            sender_drops: self.budgets[Role::Server as usize]
                .as_ref()
                .map(|b| b.refused),
            iperf: self.ends.receiver().map(|r| {
                let t = r.totals();
                IperfSummary {
                    datagrams: t.datagrams,
                    received: t.received,
                    lost: t.lost,
                    loss_pct: if t.datagrams == 0 {
                        0.0
                    } else {
                        100.0 * t.lost as f64 / t.datagrams as f64
                    },
                    out_of_order: t.out_of_order,
                    jitter_ms: t.jitter_ms,
                    throughput_bps: t.throughput_bps,
                }
            }),
            ecn: self.ends.ecn(),
        }
    }
}

/// The endpoints of one flow. Built once per flow and never moved, so the variants' sizes
/// need not match.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Ends {
    Tcp {
        client: TcpEndpoint,
        server: TcpEndpoint,
    },
    /// A media source at the server and iperf's accounting at the client.
    Udp {
        sender: UdpSender,
        receiver: IperfReceiver,
    },
    /// DCCP endpoints; the client also keeps iperf's accounting of what DCCP delivered.
    Dccp {
        client: DccpEndpoint,
        server: DccpEndpoint,
        receiver: IperfReceiver,
    },
}

/// A sender's transmission counters, for the summary.
#[derive(Default)]
pub(crate) struct SentCounts {
    pub packets: u64,
    pub data_packets: u64,
    pub retransmissions: u64,
    pub spurious_retransmissions: u64,
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
    pub fn handle(&mut self, side: Role, now: Instant, pdu: &Pdu) -> u64 {
        match (self, side, pdu) {
            (Ends::Tcp { client, .. }, Role::Client, Pdu::Tcp(s)) => client.handle_segment(now, s),
            (Ends::Tcp { server, .. }, Role::Server, Pdu::Tcp(s)) => server.handle_segment(now, s),
            (Ends::Udp { receiver, .. }, Role::Client, Pdu::Udp(d)) => {
                receiver.handle_datagram(now, d);
                return d.payload as u64;
            }
            (Ends::Dccp { client, .. }, Role::Client, Pdu::Dccp(p)) => client.handle_packet(now, p),
            (Ends::Dccp { server, .. }, Role::Server, Pdu::Dccp(p)) => server.handle_packet(now, p),
            _ => {}
        }
        0
    }

    pub fn poll_timeout(&self, side: Role) -> Option<Instant> {
        match (self, side) {
            (Ends::Tcp { client, .. }, Role::Client) => client.poll_timeout(),
            (Ends::Tcp { server, .. }, Role::Server) => server.poll_timeout(),
            (Ends::Udp { receiver, .. }, Role::Client) => receiver.poll_timeout(),
            (Ends::Udp { sender, .. }, Role::Server) => sender.poll_timeout(),
            (
                Ends::Dccp {
                    client, receiver, ..
                },
                Role::Client,
            ) => earliest(client.poll_timeout(), receiver.poll_timeout()),
            (Ends::Dccp { server, .. }, Role::Server) => server.poll_timeout(),
        }
    }

    /// Runs the side's timers that are due (a UDP source needs none: its datagrams are
    /// polled out when due).
    pub fn handle_timeout(&mut self, side: Role, now: Instant) {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        match (self, side) {
            (Ends::Tcp { client, .. }, Role::Client) if due(client.poll_timeout()) => {
                client.handle_timeout(now)
            }
            (Ends::Tcp { server, .. }, Role::Server) if due(server.poll_timeout()) => {
                server.handle_timeout(now)
            }
            (Ends::Udp { receiver, .. }, Role::Client) if due(receiver.poll_timeout()) => {
                receiver.handle_timeout(now)
            }
            (
                Ends::Dccp {
                    client, receiver, ..
                },
                Role::Client,
            ) => {
                if due(client.poll_timeout()) {
                    client.handle_timeout(now);
                }
                if due(receiver.poll_timeout()) {
                    receiver.handle_timeout(now);
                }
            }
            (Ends::Dccp { server, .. }, Role::Server) if due(server.poll_timeout()) => {
                server.handle_timeout(now)
            }
            _ => {}
        }
    }

    pub fn poll_transmit(&mut self, side: Role, now: Instant) -> Option<Pdu> {
        match (self, side) {
            (Ends::Tcp { client, .. }, Role::Client) => client.poll_transmit(now).map(Pdu::Tcp),
            (Ends::Tcp { server, .. }, Role::Server) => server.poll_transmit(now).map(Pdu::Tcp),
            (Ends::Udp { sender, .. }, Role::Server) => sender.poll_transmit(now).map(Pdu::Udp),
            (Ends::Udp { .. }, Role::Client) => None,
            (Ends::Dccp { client, .. }, Role::Client) => {
                client.poll_transmit(now).map(|p| Pdu::Dccp(Box::new(p)))
            }
            (Ends::Dccp { server, .. }, Role::Server) => {
                server.poll_transmit(now).map(|p| Pdu::Dccp(Box::new(p)))
            }
        }
    }

    /// The next event the driver must act on.
    pub fn poll_event(&mut self, side: Role, now: Instant) -> Option<AppEvent> {
        loop {
            let event = match (&mut *self, side) {
                (Ends::Tcp { client, .. }, Role::Client) => match client.poll_event()? {
                    TcpEvent::Delivered { bytes } => Some(AppEvent::Delivered(bytes)),
                    _ => None,
                },
                (Ends::Tcp { server, .. }, Role::Server) => match server.poll_event()? {
                    TcpEvent::Connected => Some(AppEvent::Connected),
                    TcpEvent::RttSample { rtt } => Some(AppEvent::RttSample(rtt)),
                    _ => None,
                },
                (
                    Ends::Dccp {
                        client, receiver, ..
                    },
                    Role::Client,
                ) => match client.poll_event()? {
                    DccpEvent::Delivered { bytes, app, .. } => {
                        if let Some(h) = app {
                            receiver.record(now, h.id, h.sent_at, bytes);
                        }
                        Some(AppEvent::Delivered(bytes as u64))
                    }
                    _ => None,
                },
                (Ends::Dccp { server, .. }, Role::Server) => {
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
            Ends::Tcp { server, client } => {
                let s = server.stats();
                SentCounts {
                    packets: s.segments_sent,
                    data_packets: s.data_segments_sent,
                    retransmissions: s.retransmitted_segments,
                    spurious_retransmissions: client.stats().duplicate_segments,
                    timeouts: s.timeouts,
                    fast_recoveries: s.fast_recoveries,
                }
            }
            Ends::Udp { sender, .. } => {
                let n = sender.stats().datagrams_sent;
                SentCounts {
                    packets: n,
                    data_packets: n,
                    ..Default::default()
                }
            }
            Ends::Dccp { server, .. } => {
                let s = server.stats();
                SentCounts {
                    packets: s.packets_sent,
                    data_packets: s.data_packets_sent,
                    ..Default::default()
                }
            }
        }
    }

    /// ECN's counts of a TCP flow that asked for it.
    pub fn ecn(&self) -> Option<EcnSummary> {
        match self {
            Ends::Tcp { client, server } if server.config().ecn => Some(EcnSummary {
                negotiated: server.ecn_enabled(),
                ce_marks_received: client.stats().ce_received,
                ece_reductions: server.stats().ecn_reductions,
            }),
            _ => None,
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
            retransmissions: 0,
            spurious_retransmissions: 0,
            timeouts: 0,
            fast_recoveries: 0,
            link_losses: -1,
            detected_losses: 0,
            sack_ok: -1,
            congestion_distance_segments: f64::NAN,
            backlog_segments: f64::NAN,
            pacing_rate_bps: f64::NAN,
        };
        match self {
            Ends::Tcp { server, client } => {
                s.cwnd_bytes = server.cwnd() as f64;
                // An unset ssthresh is "infinite": NaN keeps plots readable.
                s.ssthresh_bytes = Some(server.ssthresh())
                    .filter(|t| *t < u64::MAX / 4)
                    .map_or(f64::NAN, |t| t as f64);
                s.inflight_bytes = server.bytes_in_flight() as f64;
                s.srtt_us = us(server.srtt());
                s.rto_us = us(Some(server.rto()));
                let st = server.stats();
                s.retransmissions = st.retransmitted_segments;
                s.spurious_retransmissions = client.stats().duplicate_segments;
                s.timeouts = st.timeouts;
                s.fast_recoveries = st.fast_recoveries;
                let probe = server.controller().probe();
                s.sack_ok = probe.sack_ok.map_or(-1, i64::from);
                s.congestion_distance_segments = probe.congestion_distance.unwrap_or(f64::NAN);
                s.backlog_segments = probe.backlog_segments.unwrap_or(f64::NAN);
                s.pacing_rate_bps = server.pacing_rate().map_or(f64::NAN, |r| r as f64 * 8.0);
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
                s.detected_losses = c.lost_packets.max(client.stats().reported_lost());
            }
            Ends::Udp { receiver, .. } => s.detected_losses = receiver.totals().lost,
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
