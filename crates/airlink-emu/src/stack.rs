//! airlink's own transports in real time: the scenario's flows (TCP with any of airlink's
//! congestion controls, DCCP CCID-2/3, UDP media) run as sender/receiver pairs over UDP
//! sockets in the two namespaces, so their packets cross the emulated links like any
//! application's. This is how DCCP, Veno and TCP-AFC are emulated on a kernel that lacks them.
//!
//! One thread drives every flow's two endpoints ([`Flow`], the same objects the simulator
//! runs) with `CLOCK_MONOTONIC` instants on the emulation's origin: it sleeps on an absolute
//! `timerfd` until the next endpoint timer, flow start or sample, or until a datagram arrives
//! (`epoll` on the sockets). Endpoints act at the time they run, as a real stack does; the
//! timer lateness is reported. Each datagram carries the simulated header ([`airlink_transport::codec`]) and
//! has the simulated size. A datagram that does not decode is counted and dropped; one whose
//! checksum a link's bit errors broke never arrives (the receiving kernel drops it, as the
//! simulator's receiver does).

use crate::control::{Applied, FlowState, Inbox, LiveMarks, StackRequest};
use crate::datapath::{arm, new_fd, StopHandle};
use crate::timing::monotonic_ns;
use airlink_engine::{Duration, Instant};
use airlink_net::metrics::Recorder;
use airlink_net::{EventKind, Flow, FlowSummary};
use airlink_transport::codec::{self, Protocol, TcpUnwrap};
use airlink_transport::Role;
use serde::Serialize;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// UDP ports of flow `i`: the server's and the client's.
pub fn ports(i: usize) -> (u16, u16) {
    (47_000 + i as u16, 46_000 + i as u16)
}

/// One flow with its sockets.
pub struct StackFlow {
    pub flow: Flow,
    pub protocol: Protocol,
    /// Connected, non-blocking sockets: in the client and in the server namespace.
    pub client: UdpSocket,
    pub server: UdpSocket,
}

/// What the stack saw, for the summary.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct StackReport {
    /// Every sized flow delivered all its bytes (unsized flows run to the stop time).
    pub completed: bool,
    pub duration_s: f64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Sends the kernel refused (a full socket or device queue): the packet is lost.
    pub send_errors: u64,
    /// Datagrams that did not decode (counted, dropped).
    pub malformed: u64,
    /// Packets longer than in simulation (payload smaller than iperf's header), and by how much.
    pub oversized_packets: u64,
    pub oversize_bytes: u64,
    /// Lateness of the stack's wake-ups against the endpoint timers they served, µs.
    pub timer_late_p50_us: f64,
    pub timer_late_p99_us: f64,
    pub timer_late_max_us: f64,
    pub cpu_s: f64,
    /// SCHED_FIFO and timer slack of the stack thread: what was refused.
    pub realtime: crate::rt::RtReport,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSummary>,
}

/// A handle to stop the stack thread and to ask whether it has finished.
#[derive(Clone)]
pub struct StackHandle {
    stop: StopHandle,
    finished: Arc<AtomicBool>,
}

impl StackHandle {
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// All flows finished, or the stop time passed.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }
}

/// Timer lateness histogram: 10 µs buckets up to 100 ms.
const LATE_BUCKET_NS: u64 = 10_000;
const LATE_BUCKETS: usize = 10_001;

struct Stack {
    flows: Vec<StackFlow>,
    /// Per flow: client-side and server-side decoders (TCP sequence number state).
    unwrap: Vec<[TcpUnwrap; 2]>,
    started: Vec<bool>,
    /// Flows stopped through the control socket.
    stopped: Vec<bool>,
    origin: u64,
    recorder: Arc<Mutex<Recorder>>,
    report: StackReport,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    late_hist: Vec<u64>,
    late_max_ns: u64,
}

fn side_index(side: Role) -> usize {
    match side {
        Role::Client => 0,
        Role::Server => 1,
    }
}

fn socket(flows: &[StackFlow], i: usize, side: Role) -> &UdpSocket {
    match side {
        Role::Client => &flows[i].client,
        Role::Server => &flows[i].server,
    }
}

impl Stack {
    fn now(&self) -> Instant {
        Instant::from_nanos(monotonic_ns().saturating_sub(self.origin))
    }

    /// After an endpoint ran: the application's reactions, then everything it sends.
    fn after(&mut self, i: usize, side: Role, now: Instant) {
        {
            let mut rec = self.recorder.lock().unwrap_or_else(|p| p.into_inner());
            self.flows[i].flow.react(i as u32, side, now, &mut rec);
        }
        while let Some(pdu) = self.flows[i].flow.poll_transmit(side, now) {
            let extra = codec::encode(&pdu, &mut self.send_buf);
            if extra > 0 {
                self.report.oversized_packets += 1;
                self.report.oversize_bytes += extra as u64;
            }
            match socket(&self.flows, i, side).send(&self.send_buf) {
                Ok(_) => self.report.datagrams_sent += 1,
                Err(_) => self.report.send_errors += 1,
            }
        }
    }

    /// Reads everything waiting on one socket.
    fn receive(&mut self, i: usize, side: Role) {
        // Until WouldBlock (or an ICMP error reported on the socket: epoll wakes us again).
        while let Ok(n) = socket(&self.flows, i, side).recv(&mut self.recv_buf) {
            let now = self.now();
            let protocol = self.flows[i].protocol;
            match codec::decode(
                protocol,
                &self.recv_buf[..n],
                &mut self.unwrap[i][side_index(side)],
            ) {
                Ok(pdu) => {
                    self.report.datagrams_received += 1;
                    self.flows[i].flow.receive(side, now, &pdu);
                    self.after(i, side, now);
                }
                Err(_) => self.report.malformed += 1,
            }
        }
    }

    /// Starts flows and runs endpoint timers that are due; returns the next instant to wake.
    fn run_due(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut consider = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        for i in 0..self.flows.len() {
            if !self.started[i] {
                let start = self.flows[i].flow.start;
                if start > now {
                    consider(start);
                    continue;
                }
                self.started[i] = true;
                self.flows[i].flow.start_at(now);
                self.after(i, Role::Client, now);
                self.after(i, Role::Server, now);
            }
            for side in [Role::Client, Role::Server] {
                if let Some(t) = self.flows[i].flow.poll_timeout(side).filter(|t| *t <= now) {
                    let late = now.as_nanos().saturating_sub(t.as_nanos());
                    self.late_hist[((late / LATE_BUCKET_NS) as usize).min(LATE_BUCKETS - 1)] += 1;
                    self.late_max_ns = self.late_max_ns.max(late);
                    self.flows[i].flow.handle_timeout(side, now);
                    self.after(i, side, now);
                }
                if let Some(t) = self.flows[i].flow.poll_timeout(side) {
                    consider(t);
                }
            }
        }
        next
    }

    /// Live control: a flow starts or stops now, or the flows' state is read.
    fn serve(&mut self, req: StackRequest, marks: &LiveMarks) {
        let now = self.now();
        match req {
            StackRequest::Start { flow: i, reply } => {
                let r: Applied = if self.started[i] {
                    Err(format!("flow {i} has started already"))
                } else {
                    marks.push(now.as_nanos(), i as u32, EventKind::FlowStart);
                    self.started[i] = true;
                    self.flows[i].flow.start = now;
                    self.flows[i].flow.start_at(now);
                    self.after(i, Role::Client, now);
                    self.after(i, Role::Server, now);
                    Ok(now.as_nanos())
                };
                let _ = reply.send(r);
            }
            StackRequest::Stop { flow: i, reply } => {
                let f = &mut self.flows[i].flow;
                let r: Applied = if !self.started[i] {
                    Err(format!("flow {i} has not started"))
                } else if self.stopped[i] || f.done {
                    Err(format!("flow {i} has stopped already"))
                } else {
                    // The server's timer carries the stop, as a scheduled one.
                    marks.push(now.as_nanos(), i as u32, EventKind::FlowStop);
                    self.stopped[i] = true;
                    f.stop_at(now);
                    Ok(now.as_nanos())
                };
                let _ = reply.send(r);
            }
            StackRequest::State { reply } => {
                let states = self
                    .flows
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        FlowState::new(
                            self.started[i],
                            self.stopped[i],
                            f.flow.done,
                            f.flow.delivered,
                            &f.flow.sample(),
                        )
                    })
                    .collect();
                let _ = reply.send(states);
            }
        }
    }

    fn sample(&mut self, at: Instant) {
        let mut rec = self.recorder.lock().unwrap_or_else(|p| p.into_inner());
        if !rec.enabled {
            return;
        }
        for (i, f) in self.flows.iter().enumerate() {
            rec.flows
                .push(at, i as u32, f.flow.delivered, &f.flow.sample());
        }
    }

    /// Every flow with a size delivered it (flows without one never end by themselves).
    fn all_done(&self) -> bool {
        self.flows.iter().all(|f| f.flow.done)
    }

    /// As in simulation (each flow's `completed`), and unsized flows ran to the stop time.
    fn finish(mut self, started: u64, cpu0: u64, reached_stop: bool) -> StackReport {
        let r = &mut self.report;
        r.completed = self
            .flows
            .iter()
            .all(|f| f.flow.done || (f.flow.completed() && reached_stop));
        r.duration_s = (monotonic_ns() - started) as f64 * 1e-9;
        r.cpu_s = crate::timing::thread_cpu_ns().saturating_sub(cpu0) as f64 * 1e-9;
        let total: u64 = self.late_hist.iter().sum();
        let q = |p: f64| {
            (crate::timing::histogram_quantile(&self.late_hist, p) as u64 * LATE_BUCKET_NS) as f64
                / 1e3
        };
        if total > 0 {
            r.timer_late_p50_us = q(0.5);
            r.timer_late_p99_us = q(0.99);
            r.timer_late_max_us = self.late_max_ns as f64 / 1e3;
        }
        r.flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut summary = f.flow.summary(i as u32);
                // A flow without a size stopped before the stop time did not complete.
                summary.completed &= f.flow.done || reached_stop;
                summary
            })
            .collect();
        self.report
    }
}

/// Everything the stack thread needs.
pub struct StackParts {
    pub flows: Vec<StackFlow>,
    /// `CLOCK_MONOTONIC` of virtual instant zero (the datapath's origin).
    pub origin_mono_ns: u64,
    /// The scenario's stop time.
    pub stop_at: Instant,
    pub sample_interval: Duration,
    pub recorder: Arc<Mutex<Recorder>>,
    /// Try SCHED_FIFO (just below the datapath) for the stack thread.
    pub realtime: bool,
    /// Live control's requests, and where live starts and stops are marked.
    pub control: Inbox<StackRequest>,
    pub marks: LiveMarks,
}

/// Prepares the handle and the runner; the runner is called on the stack thread.
pub fn prepare(parts: StackParts) -> std::io::Result<(StackHandle, impl FnOnce() -> StackReport)> {
    let stop = StopHandle::new()?;
    // SAFETY: plain syscalls creating new descriptors.
    let timerfd = new_fd(
        unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        },
        "timerfd_create",
    )?;
    let epfd = new_fd(
        unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) },
        "epoll_create1",
    )?;
    let timer_tag = u64::MAX;
    let stop_tag = u64::MAX - 1;
    let control_tag = u64::MAX - 2;
    let mut fds = vec![
        (timerfd.as_raw_fd(), timer_tag),
        (stop.fd(), stop_tag),
        (parts.control.fd(), control_tag),
    ];
    for (i, f) in parts.flows.iter().enumerate() {
        fds.push((f.client.as_raw_fd(), 2 * i as u64));
        fds.push((f.server.as_raw_fd(), 2 * i as u64 + 1));
    }
    for (fd, tag) in fds {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: tag,
        };
        // SAFETY: valid descriptors and event.
        if unsafe { libc::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            return Err(std::io::Error::other(format!(
                "epoll_ctl: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    let handle = StackHandle {
        stop,
        finished: Arc::new(AtomicBool::new(false)),
    };
    let (stop, finished) = (handle.stop.clone(), handle.finished.clone());
    let run = move || {
        // Endpoint timers want exact wake-ups too; memory is locked by the datapath already.
        let rt = crate::rt::apply_at(crate::rt::STACK_FIFO_PRIORITY, parts.realtime, false);
        let cpu0 = crate::timing::thread_cpu_ns();
        let started = monotonic_ns();
        let n = parts.flows.len();
        let mut st = Stack {
            unwrap: (0..n).map(|_| Default::default()).collect(),
            started: vec![false; n],
            stopped: vec![false; n],
            flows: parts.flows,
            origin: parts.origin_mono_ns,
            recorder: parts.recorder,
            report: StackReport::default(),
            send_buf: Vec::with_capacity(65_536),
            recv_buf: vec![0; 65_536],
            late_hist: vec![0; LATE_BUCKETS],
            late_max_ns: 0,
        };
        let sampling = !parts.sample_interval.is_zero();
        let mut next_sample = Instant::ZERO;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
        let mut armed: Option<Instant> = None;
        let reached_stop = loop {
            if stop.stopped() {
                break false;
            }
            while let Some(req) = parts.control.next() {
                st.serve(req, &parts.marks);
            }
            let now = st.now();
            if now >= parts.stop_at {
                break true;
            }
            let mut next = st.run_due(now);
            if sampling {
                if next_sample <= now {
                    st.sample(next_sample);
                    let k = (now.as_nanos() - next_sample.as_nanos())
                        / parts.sample_interval.as_nanos()
                        + 1;
                    next_sample += parts.sample_interval.saturating_mul(k);
                }
                next = Some(next.map_or(next_sample, |t| t.min(next_sample)));
            }
            if st.all_done() {
                break false;
            }
            let wake = next.map_or(parts.stop_at, |t| t.min(parts.stop_at));
            if armed != Some(wake) {
                arm(&timerfd, Some(parts.origin_mono_ns + wake.as_nanos()));
                armed = Some(wake);
            }
            // SAFETY: valid epoll descriptor and buffer.
            let k = unsafe {
                libc::epoll_wait(
                    epfd.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    -1,
                )
            };
            for ev in events.iter().take(k.max(0) as usize) {
                let tag = ev.u64; // a copy: epoll_event is packed
                match tag {
                    t if t == timer_tag => {
                        let mut b = [0u8; 8];
                        // SAFETY: reading the 8-byte expiry count clears the timer.
                        unsafe { libc::read(timerfd.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
                        armed = None;
                    }
                    t if t == stop_tag => {}
                    t if t == control_tag => parts.control.clear(),
                    t => {
                        let side = if t % 2 == 0 {
                            Role::Client
                        } else {
                            Role::Server
                        };
                        st.receive((t / 2) as usize, side);
                    }
                }
            }
        };
        finished.store(true, Ordering::SeqCst);
        st.report.realtime = rt;
        st.finish(started, cpu0, reached_stop)
    };
    Ok((handle, run))
}
