//! Live control of a running emulation: a Unix socket that takes the changes a scenario's
//! `[[change]]`s can make (and flow starts and stops), applied now, and answers state reads.
//!
//! - Protocol: one JSON object per line each way. A request names its `op` (`set`, `down`,
//!   `up`, `handoff`, `start`, `stop`, `state`) and the keys of the `[[change]]` it stands
//!   for (`link` and `set`; `link` and `packets`; `flow`, `path` and `return_path`); the answer
//!   is `{"ok": true, ...}` or `{"ok": false, "error": "..."}`. A refused request changes
//!   nothing.
//! - Checks: a change is checked by the scenario's own validation of timed changes
//!   ([`Scenario::validate_live_change`]) against the links down now, then applied by the
//!   datapath the way it applies a timed change; it is recorded in `events.parquet` marked
//!   `live`.
//! - Timing: the real-time threads never wait on the socket. Requests reach them through a
//!   [`Mailbox`]: a channel they empty at their wake-ups and an `eventfd` in their `epoll` set
//!   that wakes them when idle. Their answers go back through channels that never block.
//! - Access: the socket is created in a private directory, made mode 0600, given to the user
//!   who started the run (`SUDO_UID` under sudo) and only then moved into place; a peer that is
//!   neither that user nor root is refused as well (`SO_PEERCRED`).
//! - Slow and idle clients: a request line is collected as bytes and refused (with an answer,
//!   then the connection closes) once it is longer than 64 KiB or older than 10 s, however
//!   slowly it comes; one that is not UTF-8 gets an error answer and the connection goes on.
//!   At most 16 connections are served; a new one closes the longest idle to make room, so
//!   idle clients never lock out `ctl` or `top`.

use crate::datapath::{new_fd, StopHandle};
use airlink_link::{LinkChange, QueueLimit};
use airlink_net::metrics::FlowSample;
use airlink_net::{EventKind, NetChange};
use airlink_scenario::{ChangeConfig, FlowRef, Scenario};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a request waits for the real-time thread's answer before calling the run gone.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request line.
const MAX_LINE: u64 = 64 << 10;
/// How long a request line may take to arrive, from its first byte to its newline.
const LINE_DEADLINE: Duration = Duration::from_secs(10);
/// Connections served at once (`airlink top` keeps one open); when full, the longest idle
/// one is closed to make room for a new one.
const MAX_CONNECTIONS: usize = 16;

/// The sending end of a real-time thread's mailbox: posting never blocks.
pub struct Mailbox<T> {
    tx: Sender<T>,
    wake: Arc<OwnedFd>,
}

impl<T> Clone for Mailbox<T> {
    fn clone(&self) -> Self {
        Mailbox {
            tx: self.tx.clone(),
            wake: self.wake.clone(),
        }
    }
}

/// The receiving end, emptied by the real-time thread at its wake-ups.
pub struct Inbox<T> {
    rx: Receiver<T>,
    wake: Arc<OwnedFd>,
}

/// A mailbox and its inbox.
pub fn mailbox<T>() -> std::io::Result<(Mailbox<T>, Inbox<T>)> {
    // SAFETY: a plain syscall creating a new descriptor.
    let wake = Arc::new(new_fd(
        unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) },
        "eventfd",
    )?);
    let (tx, rx) = channel();
    Ok((
        Mailbox {
            tx,
            wake: wake.clone(),
        },
        Inbox { rx, wake },
    ))
}

impl<T> Mailbox<T> {
    /// Hands `msg` over and wakes the thread; false when the thread has gone.
    fn post(&self, msg: T) -> bool {
        if self.tx.send(msg).is_err() {
            return false;
        }
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to an eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        true
    }
}

impl<T> Inbox<T> {
    /// The descriptor to add to the thread's `epoll` set.
    pub fn fd(&self) -> i32 {
        self.wake.as_raw_fd()
    }

    /// Clears the wake-up (after `epoll` reported the descriptor).
    pub fn clear(&self) {
        let mut b = [0u8; 8];
        // SAFETY: reading the 8-byte counter of a non-blocking eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
    }

    /// The next request, if one is waiting (never blocks).
    pub fn next(&self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// What a real-time thread answers: the change's emulated instant (ns), or why it refused it.
pub type Applied = Result<u64, String>;

/// Requests to the datapath thread.
pub enum DatapathRequest {
    /// Apply a change now (checked already) and record it as live.
    Apply {
        change: NetChange,
        reply: Sender<Applied>,
    },
    State {
        reply: Sender<DatapathState>,
    },
}

/// Requests to the thread of airlink's own transports.
pub enum StackRequest {
    Start { flow: usize, reply: Sender<Applied> },
    Stop { flow: usize, reply: Sender<Applied> },
    State { reply: Sender<Vec<FlowState>> },
}

/// The links and the traffic of each flow, as the datapath sees them now.
#[derive(Clone, Debug, Serialize)]
pub struct DatapathState {
    /// Emulated time of the reading, s.
    pub time_s: f64,
    pub links: Vec<LinkState>,
    /// Per scenario flow: the IP packets and bytes written to each end (its path's traffic).
    pub flows: Vec<FlowTraffic>,
    pub wakeups: u64,
}

/// One link now: its parameters, counters, queue and model state.
#[derive(Clone, Debug, Serialize)]
pub struct LinkState {
    pub name: &'static str,
    pub model: &'static str,
    pub up: bool,
    /// The parameters as configured and changed since (`None`: the model has none such).
    pub rate_bps: Option<u64>,
    pub delay_s: Option<f64>,
    pub queue_limit_packets: Option<u32>,
    pub queue_limit_bytes: Option<u64>,
    pub loss: Option<f64>,
    pub bit_error_rate: Option<f64>,
    pub mean_snr_db: Option<f64>,
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub queue_packets: u32,
    pub queue_bytes: u64,
    pub drops: LinkDrops,
    /// A radio link's channel now: SNR, predicted SNR, modulation (bits per symbol), sub-band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radio: Option<Radio>,
}

/// A link's losses so far, by cause.
#[derive(Clone, Debug, Serialize)]
pub struct LinkDrops {
    pub queue: u64,
    pub loss: u64,
    pub outage: u64,
    /// Packets that left with bit errors (the receiver's checksum drops them).
    pub corrupted: u64,
    /// Packets released corrupted because ARQ gave up on a frame.
    pub arq_gave_up: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Radio {
    pub snr_db: f64,
    pub predicted_snr_db: f64,
    pub modulation_bits: u32,
    pub subband: u32,
}

/// A flow's packets at the ports: to the client (`down`) and to the server (`up`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowTraffic {
    pub down_packets: u64,
    pub down_bytes: u64,
    pub up_packets: u64,
    pub up_bytes: u64,
}

/// One of airlink's own flows now (the endpoints' state).
#[derive(Clone, Debug, Serialize)]
pub struct FlowState {
    pub started: bool,
    pub stopped: bool,
    pub done: bool,
    /// Payload delivered to the client's application, bytes.
    pub delivered_bytes: u64,
    /// TCP's and CCID-2's congestion window, CCID-3's allowed rate, the smoothed RTT (NaN
    /// where the protocol has none).
    pub cwnd_bytes: f64,
    pub rate_bps: f64,
    pub srtt_ms: f64,
    pub retransmissions: u64,
}

impl FlowState {
    pub fn new(
        started: bool,
        stopped: bool,
        done: bool,
        delivered_bytes: u64,
        s: &FlowSample,
    ) -> FlowState {
        FlowState {
            started,
            stopped,
            done,
            delivered_bytes,
            cwnd_bytes: s.cwnd_bytes,
            rate_bps: s.rate_bps,
            srtt_ms: s.srtt_us / 1e3,
            retransmissions: s.retransmissions,
        }
    }
}

impl LinkState {
    /// `p` holds the link's parameters now (a change's fields over the configured ones).
    pub fn params(mut self, p: &LinkChange) -> LinkState {
        self.rate_bps = p.rate_bps;
        self.delay_s = p.delay.map(|d| d.as_secs_f64());
        (self.queue_limit_packets, self.queue_limit_bytes) = match p.queue_limit {
            Some(QueueLimit::Packets(n)) => (Some(n), None),
            Some(QueueLimit::Bytes(b)) => (None, Some(b)),
            None => (None, None),
        };
        self.loss = p.loss;
        self.bit_error_rate = p.bit_error_rate;
        self.mean_snr_db = p.mean_snr_db;
        self
    }
}

/// `c`'s values over `p`'s.
pub fn merge(p: &mut LinkChange, c: &LinkChange) {
    p.rate_bps = c.rate_bps.or(p.rate_bps);
    p.delay = c.delay.or(p.delay);
    p.queue_limit = c.queue_limit.or(p.queue_limit);
    p.loss = c.loss.or(p.loss);
    p.bit_error_rate = c.bit_error_rate.or(p.bit_error_rate);
    p.mean_snr_db = c.mean_snr_db.or(p.mean_snr_db);
}

/// Flow starts and stops made live: (emulated ns, flow, kind). The stack logs such an event
/// as any other (at the instant it handles it, not before the mark's); [`LiveMarks::take`]
/// finds its row.
#[derive(Clone, Default)]
pub struct LiveMarks(Arc<Mutex<Vec<Mark>>>);

/// (emulated ns, flow, kind) of a flow start or stop made live.
type Mark = (u64, u32, EventKind);

impl LiveMarks {
    pub fn push(&self, at_ns: u64, flow: u32, kind: EventKind) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((at_ns, flow, kind));
    }

    /// Whether an event row (its `kind` column's value) is one made live (its mark is used
    /// up).
    pub fn take(&self, time_ns: u64, flow: u32, kind: &str) -> bool {
        let mut marks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match marks
            .iter()
            .position(|&(t, f, k)| f == flow && k.as_str() == kind && t <= time_ns)
        {
            Some(i) => {
                marks.remove(i);
                true
            }
            None => false,
        }
    }
}

/// What the control endpoint shares with the emulation.
pub struct Shared {
    /// The resolved scenario: names, models and the checks of its changes.
    pub scenario: Scenario,
    pub datapath: Mailbox<DatapathRequest>,
    /// airlink's own transports, once started.
    pub stack: Mutex<Option<Mailbox<StackRequest>>>,
    /// Flow starts and stops made live, to mark their rows in `events`.
    pub live_flow_events: LiveMarks,
    /// The kernel's TCP connections, sampled ([`crate::kernel_tcp`]): per flow the latest.
    pub kernel_tcp: crate::kernel_tcp::Latest,
    /// One change at a time: checked against the state it is applied to.
    changing: Mutex<()>,
    ended: AtomicBool,
}

impl Shared {
    pub fn new(scenario: Scenario, datapath: Mailbox<DatapathRequest>) -> Shared {
        Shared {
            scenario,
            datapath,
            stack: Mutex::new(None),
            live_flow_events: LiveMarks::default(),
            kernel_tcp: Default::default(),
            changing: Mutex::new(()),
            ended: AtomicBool::new(false),
        }
    }

    /// The run is stopping: every request from now on is refused.
    pub fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }
}

const ENDED: &str = "the run has ended";

fn ask<Q, A>(mailbox: &Mailbox<Q>, make: impl FnOnce(Sender<A>) -> Q) -> Result<A, String> {
    let (tx, rx) = channel();
    if !mailbox.post(make(tx)) {
        return Err(ENDED.into());
    }
    rx.recv_timeout(ANSWER_TIMEOUT).map_err(|e| match e {
        RecvTimeoutError::Timeout => "the emulation did not answer within 5 s".to_string(),
        RecvTimeoutError::Disconnected => ENDED.to_string(),
    })
}

/// The keys each operation takes besides `op`.
fn keys(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "set" => &["link", "set"],
        "down" => &["link", "packets"],
        "up" => &["link"],
        "handoff" => &["flow", "path", "return_path"],
        "start" | "stop" => &["flow"],
        "state" => &[],
        _ => return None,
    })
}

/// Answers one request line.
pub fn handle(shared: &Shared, line: &str) -> Value {
    match request(shared, line) {
        Ok(Value::Object(mut m)) => {
            m.insert("ok".into(), Value::Bool(true));
            Value::Object(m)
        }
        Ok(_) => unreachable!("answers are objects"),
        Err(e) => json!({"ok": false, "error": e}),
    }
}

fn request(shared: &Shared, line: &str) -> Result<Value, String> {
    if shared.ended.load(Ordering::SeqCst) {
        return Err(ENDED.into());
    }
    let mut req: Map<String, Value> = match serde_json::from_str(line) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err("expected a JSON object such as {\"op\": \"state\"}".into()),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    let op = match req.remove("op") {
        Some(Value::String(op)) => op,
        _ => {
            return Err("expected \"op\": one of set, down, up, handoff, start, stop, state".into())
        }
    };
    let allowed = keys(&op).ok_or_else(|| {
        format!("unknown op \"{op}\": expected one of set, down, up, handoff, start, stop, state")
    })?;
    if let Some(k) = req.keys().find(|k| !allowed.contains(&k.as_str())) {
        let expected = if allowed.is_empty() {
            "nothing else".to_string()
        } else {
            allowed.join(", ")
        };
        return Err(format!(
            "`{k}` does not belong to `{op}`: expected {expected}"
        ));
    }
    // The first key (the link or flow) is the one every request but `state` needs.
    if let Some(k) = allowed.first().filter(|k| !req.contains_key(**k)) {
        return Err(format!("`{op}` needs `{k}`"));
    }
    match op.as_str() {
        "state" => state(shared),
        "start" | "stop" => flow_request(shared, &op, req),
        _ => change(shared, &op, req),
    }
}

fn state(shared: &Shared) -> Result<Value, String> {
    let dp = ask(&shared.datapath, |reply| DatapathRequest::State { reply })?;
    let stack = shared
        .stack
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let own = match stack {
        Some(m) => Some(ask(&m, |reply| StackRequest::State { reply })?),
        None => None,
    };
    let kernel = shared
        .kernel_tcp
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let flows: Vec<Value> = shared
        .scenario
        .flow
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut v = json!({"index": i, "name": f.name, "traffic": dp.flows.get(i)});
            if let Some(own) = own.as_ref().and_then(|o| o.get(i)) {
                v["own"] = serde_json::to_value(own).expect("flow states serialise");
            }
            if let Some(k) = kernel.get(&(i as u32)) {
                v["kernel"] = serde_json::to_value(k).expect("flow states serialise");
            }
            v
        })
        .collect();
    Ok(json!({
        "time_s": dp.time_s,
        "scenario": shared.scenario.name,
        "endpoints": if own.is_some() { "airlink" } else { "kernel" },
        "links": dp.links,
        "flows": flows,
        "wakeups": dp.wakeups,
    }))
}

fn flow_request(shared: &Shared, op: &str, req: Map<String, Value>) -> Result<Value, String> {
    let f: FlowRef =
        serde_json::from_value(req["flow"].clone()).map_err(|e| format!("flow: {e}"))?;
    let flow = shared
        .scenario
        .find_flow(&f)
        .map_err(|m| format!("flow: {m}"))?;
    // A UDP or DCCP source keeps the schedule it was built with (its start and stop are part
    // of it); a TCP application starts when its connection opens and stops writing when told.
    if shared.scenario.flow[flow].protocol != airlink_scenario::Protocol::Tcp {
        return Err(format!(
            "flow {flow} is not TCP: a UDP or DCCP source starts and stops on its own schedule (flow.start, flow.stop); `{op}` applies to TCP flows"
        ));
    }
    let stack = shared.stack.lock().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(|| {
        format!("`{op}` applies to airlink's own transports, and none run here: this run's traffic comes from its --client/--server commands")
    })?;
    let _one = shared.changing.lock().unwrap_or_else(|p| p.into_inner());
    let t = ask(&stack, |reply| {
        if op == "start" {
            StackRequest::Start { flow, reply }
        } else {
            StackRequest::Stop { flow, reply }
        }
    })??;
    Ok(json!({"time_s": t as f64 * 1e-9, "flow": flow}))
}

fn change(shared: &Shared, op: &str, mut req: Map<String, Value>) -> Result<Value, String> {
    req.insert("at".into(), Value::String("0 s".into()));
    match op {
        "down" => drop(req.insert("state".into(), Value::String("down".into()))),
        "up" => drop(req.insert("state".into(), Value::String("up".into()))),
        "handoff" if !req.contains_key("path") && !req.contains_key("return_path") => {
            return Err("`handoff` needs the flow's new `path` and/or `return_path`".into())
        }
        _ => {}
    }
    let c: ChangeConfig = serde_json::from_value(Value::Object(req)).map_err(|e| e.to_string())?;
    let _one = shared.changing.lock().unwrap_or_else(|p| p.into_inner());
    let now = ask(&shared.datapath, |reply| DatapathRequest::State { reply })?;
    let down: Vec<&str> = now.links.iter().filter(|l| !l.up).map(|l| l.name).collect();
    shared
        .scenario
        .validate_live_change(&c, &down)
        .map_err(|(key, m)| {
            if key.is_empty() {
                m
            } else {
                format!("{}: {m}", key.join("."))
            }
        })?;
    let change = airlink_net::build::live_change(&shared.scenario, &c).map_err(|e| e.0)?;
    let t = ask(&shared.datapath, |reply| DatapathRequest::Apply {
        change,
        reply,
    })??;
    Ok(json!({"time_s": t as f64 * 1e-9}))
}

/// The listening socket and its thread; stopping removes the socket.
pub struct ControlServer {
    path: PathBuf,
    stop: StopHandle,
    thread: Option<JoinHandle<()>>,
}

/// The user the socket belongs to: the one who ran `sudo`, else this process's.
fn owner() -> (libc::uid_t, libc::gid_t) {
    // SAFETY: plain getters.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    match (uid, env("SUDO_UID"), env("SUDO_GID")) {
        (0, Some(u), Some(g)) => (u, g),
        _ => (uid, gid),
    }
}

fn peer_uid(s: &UnixStream) -> Option<libc::uid_t> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket and a buffer of the option's size.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

impl ControlServer {
    /// Listens at `path` (which must not exist) for the run described by `shared`.
    pub fn start(path: &Path, shared: Arc<Shared>) -> Result<ControlServer, String> {
        Self::start_with(path, shared, LIMITS)
    }

    fn start_with(
        path: &Path,
        shared: Arc<Shared>,
        limits: Limits,
    ) -> Result<ControlServer, String> {
        let err = |what: &str, e: std::io::Error| {
            format!("control socket {}: {what}: {e}", path.display())
        };
        let dir = path
            .parent()
            .ok_or_else(|| format!("control socket {}: no folder", path.display()))?;
        // Bound in a private folder, restricted, then moved into place: never reachable by others.
        let private = dir.join(format!(".control-{}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&private)
            .map_err(|e| err("cannot create a private folder", e))?;
        let bound = private.join("s");
        let listener = (|| {
            // Through a descriptor of the folder: a socket's path is at most 107 bytes.
            let dir = std::fs::File::open(&private)
                .map_err(|e| err("cannot open its private folder", e))?;
            let l = UnixListener::bind(format!("/proc/self/fd/{}/s", dir.as_raw_fd()))
                .map_err(|e| err("cannot listen", e))?;
            std::fs::set_permissions(&bound, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .map_err(|e| err("chmod", e))?;
            let (uid, gid) = owner();
            std::os::unix::fs::chown(&bound, Some(uid), Some(gid)).map_err(|e| err("chown", e))?;
            std::fs::rename(&bound, path).map_err(|e| err("cannot move it into place", e))?;
            Ok::<_, String>(l)
        })();
        let _ = std::fs::remove_file(&bound);
        let _ = std::fs::remove_dir(&private);
        let listener = listener?;
        listener
            .set_nonblocking(true)
            .map_err(|e| err("set_nonblocking", e))?;
        let stop = StopHandle::new().map_err(|e| err("eventfd", e))?;
        let (flag, allowed) = (stop.clone(), owner().0);
        let thread = std::thread::Builder::new()
            .name("airlink-control".into())
            .spawn(move || serve(listener, flag, shared, allowed, limits))
            .map_err(|e| err("cannot start its thread", e))?;
        Ok(ControlServer {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }

    /// Removes the socket and ends the listening thread (connections end within 0.2 s).
    pub fn stop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What one connection may hold and take, and how many are served at once.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// The longest request line (its newline aside), counted as it arrives.
    max_line: usize,
    /// How long a request line may take to arrive, from its first byte.
    line_deadline: Duration,
    max_connections: usize,
}

const LIMITS: Limits = Limits {
    max_line: MAX_LINE as usize,
    line_deadline: LINE_DEADLINE,
    max_connections: MAX_CONNECTIONS,
};

/// What a connection closed to make room for a newer one is told: its next request was not
/// handled (`reconnect`: the client may send it again on a new connection).
const EVICTED: &str =
    "this connection was the longest idle and was closed to make room for a newer one";

/// The open connections, shared by the listening thread and the connections' threads.
#[derive(Default)]
struct Connections {
    next_id: u64,
    open: Vec<Connection>,
}

struct Connection {
    id: u64,
    /// A handle on its socket, to close it from the listening thread.
    stream: UnixStream,
    /// When it last finished a request (or opened).
    quiet_since: std::time::Instant,
    /// Answering a request now: never closed then.
    busy: bool,
}

type Registry = Arc<Mutex<Connections>>;

fn lock(r: &Registry) -> std::sync::MutexGuard<'_, Connections> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

/// Marks connection `id` busy (or done); false when it was closed to make room meanwhile.
fn set_busy(r: &Registry, id: u64, busy: bool) -> bool {
    let mut conns = lock(r);
    let Some(c) = conns.open.iter_mut().find(|c| c.id == id) else {
        return false;
    };
    c.busy = busy;
    if !busy {
        c.quiet_since = std::time::Instant::now();
    }
    true
}

/// Writes one line without waiting: the listening thread never blocks on a client.
fn send_now(s: &UnixStream, v: &Value) {
    let line = format!("{v}\n");
    // SAFETY: a valid socket and buffer.
    unsafe {
        libc::send(
            s.as_raw_fd(),
            line.as_ptr().cast(),
            line.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
}

fn serve(
    listener: UnixListener,
    stop: StopHandle,
    shared: Arc<Shared>,
    allowed: libc::uid_t,
    limits: Limits,
) {
    let registry = Registry::default();
    while !stop.stopped() {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: valid descriptors and array.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let _ = stream.set_nonblocking(false);
        if !matches!(peer_uid(&stream), Some(u) if u == 0 || u == allowed) {
            send_now(
                &stream,
                &json!({"ok": false, "error": "only the user who started the run, and root, may control it"}),
            );
            continue;
        }
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        let id = {
            let mut conns = lock(&registry);
            if conns.open.len() >= limits.max_connections {
                // Full: the longest idle connection makes room, so that idle or slow clients
                // never lock out `ctl` or `top`. Only when every one is answering a request
                // (each within ANSWER_TIMEOUT) is the new one refused.
                let idle = conns
                    .open
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !c.busy)
                    .min_by_key(|(_, c)| c.quiet_since)
                    .map(|(i, _)| i);
                let Some(i) = idle else {
                    drop(conns);
                    send_now(
                        &stream,
                        &json!({"ok": false, "error": "too many requests to this run at once: try again"}),
                    );
                    continue;
                };
                let old = conns.open.swap_remove(i);
                send_now(
                    &old.stream,
                    &json!({"ok": false, "error": EVICTED, "reconnect": true}),
                );
                let _ = old.stream.shutdown(std::net::Shutdown::Both);
            }
            conns.next_id += 1;
            let id = conns.next_id;
            conns.open.push(Connection {
                id,
                stream: handle,
                quiet_since: std::time::Instant::now(),
                busy: false,
            });
            id
        };
        let (shared, reg, stop) = (shared.clone(), registry.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("airlink-control-conn".into())
            .spawn(move || {
                connection(stream, &shared, &stop, &reg, id, limits);
                lock(&reg).open.retain(|c| c.id != id);
            });
        if spawned.is_err() {
            // The stream went with the closure: the client sees the connection close.
            lock(&registry).open.retain(|c| c.id != id);
        }
    }
}

/// Answers the lines of one connection until it closes, breaks a limit, is closed to make
/// room, or the run ends. A line is collected as bytes: its size and age are checked while it
/// arrives, however slowly, and one that is not UTF-8 gets an error answer.
fn connection(
    stream: UnixStream,
    shared: &Shared,
    stop: &StopHandle,
    registry: &Registry,
    id: u64,
    limits: Limits,
) {
    // Wake-ups to look at the run's end and the line's deadline; a client that does not read
    // its answers cannot hold the thread for ever either.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
    let fail = |out: &UnixStream, error: String| {
        let _ = writeln!(&*out, "{}", json!({"ok": false, "error": error}));
    };
    let too_long = || format!("a request is one line of at most {} bytes", limits.max_line);
    let mut pending: Vec<u8> = Vec::new();
    // When the first byte of the line in `pending` came.
    let mut started = std::time::Instant::now();
    let mut chunk = [0u8; 4096];
    while !stop.stopped() {
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            if end > limits.max_line {
                return fail(&stream, too_long());
            }
            let line: Vec<u8> = pending.drain(..=end).collect();
            started = std::time::Instant::now();
            if !set_busy(registry, id, true) {
                return; // closed to make room: the client was told
            }
            let answer = match std::str::from_utf8(&line) {
                Ok(line) => handle(shared, line.trim()),
                Err(_) => json!({"ok": false, "error": "request is not UTF-8"}),
            };
            set_busy(registry, id, false);
            if writeln!(&stream, "{answer}").is_err() {
                return;
            }
        }
        if pending.len() > limits.max_line {
            return fail(&stream, too_long());
        }
        if !pending.is_empty() && started.elapsed() > limits.line_deadline {
            return fail(
                &stream,
                format!(
                    "a request line must arrive within {} s",
                    limits.line_deadline.as_secs_f64()
                ),
            );
        }
        match (&stream).read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                if pending.is_empty() {
                    started = std::time::Instant::now();
                }
                pending.extend_from_slice(&chunk[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datapath that answers from a thread: `down` links are down; changes are collected.
    fn datapath(down: &'static [&'static str]) -> (Shared, std::sync::mpsc::Receiver<NetChange>) {
        let s = Scenario::from_toml(
            "[downlink.pipe]\nrate = \"10 Mbit/s\"\n[uplink.pipe]\n[[flow]]\n",
            "x.toml",
        )
        .unwrap();
        let s = airlink_net::build::resolve(&s).unwrap();
        let names: Vec<&'static str> = vec!["wired.down", "downlink", "uplink", "wired.up"];
        let (mailbox, inbox) = mailbox::<DatapathRequest>().unwrap();
        let (applied_tx, applied) = channel();
        std::thread::spawn(move || loop {
            let Ok(req) = inbox.rx.recv() else { return };
            match req {
                DatapathRequest::Apply { change, reply } => {
                    let _ = applied_tx.send(change);
                    let _ = reply.send(Ok(1_500_000_000));
                }
                DatapathRequest::State { reply } => {
                    let link = |name: &'static str| LinkState {
                        name,
                        model: "pipe",
                        up: !down.contains(&name),
                        rate_bps: None,
                        delay_s: None,
                        queue_limit_packets: None,
                        queue_limit_bytes: None,
                        loss: None,
                        bit_error_rate: None,
                        mean_snr_db: None,
                        packets_in: 0,
                        packets_out: 0,
                        bytes_out: 0,
                        queue_packets: 0,
                        queue_bytes: 0,
                        drops: LinkDrops {
                            queue: 0,
                            loss: 0,
                            outage: 0,
                            corrupted: 0,
                            arq_gave_up: 0,
                        },
                        radio: None,
                    };
                    let _ = reply.send(DatapathState {
                        time_s: 1.5,
                        links: names.iter().map(|n| link(n)).collect(),
                        flows: vec![],
                        wakeups: 0,
                    });
                }
            }
        });
        (Shared::new(s, mailbox), applied)
    }

    fn error(v: Value) -> String {
        assert_eq!(v["ok"], false, "{v}");
        v["error"].as_str().unwrap().to_string()
    }

    #[test]
    fn a_valid_change_reaches_the_datapath_and_a_bad_one_does_not() {
        let (shared, applied) = datapath(&["uplink"]);
        let ok = handle(
            &shared,
            r#"{"op": "set", "link": "downlink", "set": {"rate": "2 Mbit/s"}}"#,
        );
        assert_eq!(
            (ok["ok"].as_bool(), ok["time_s"].as_f64()),
            (Some(true), Some(1.5))
        );
        match applied.try_recv().unwrap() {
            NetChange::Set { link: 1, change } => assert_eq!(change.rate_bps, Some(2_000_000)),
            other => panic!("{other:?}"),
        }
        for (req, message) in [
            (
                r#"{"op": "set", "link": "downlink", "set": {"mean_snr": "9 dB"}}"#,
                "set: this pipe link cannot change its `mean_snr`",
            ),
            (
                r#"{"op": "set", "link": "downlink", "set": {"rate": "-1 Mbit/s"}}"#,
                "a rate must be positive",
            ),
            (
                r#"{"op": "down", "link": "uplink"}"#,
                "link \"uplink\" is already down then",
            ),
            (
                r#"{"op": "up", "link": "downlink"}"#,
                "link \"downlink\" is already up then",
            ),
            (
                r#"{"op": "set", "link": "downlink"}"#,
                "expected either `set`",
            ),
            (r#"{"op": "up"}"#, "`up` needs `link`"),
            (
                r#"{"op": "up", "link": "uplink", "packets": "kept"}"#,
                "`packets` does not belong to `up`",
            ),
            (
                r#"{"op": "handoff", "flow": 0}"#,
                "needs the flow's new `path`",
            ),
            (
                r#"{"op": "start", "flow": 0}"#,
                "applies to airlink's own transports",
            ),
            (
                r#"{"op": "start", "flow": "phone"}"#,
                "flow: no flow named \"phone\"",
            ),
            (r#"["state"]"#, "expected a JSON object"),
            (r#"{"op": "state""#, "not JSON"),
        ] {
            let e = error(handle(&shared, req));
            assert!(e.contains(message), "{req}: {e}");
        }
        assert!(
            applied.try_recv().is_err(),
            "a refused request reached the datapath"
        );
        assert!(handle(&shared, r#"{"op": "up", "link": "uplink"}"#)["ok"]
            .as_bool()
            .unwrap());
        shared.end();
        assert_eq!(
            error(handle(&shared, r#"{"op": "state"}"#)),
            "the run has ended"
        );
    }

    /// A control server on a mock datapath, in a folder of its own (removed when dropped).
    struct Served(ControlServer, PathBuf);

    impl Drop for Served {
        fn drop(&mut self) {
            self.0.stop();
            let _ = std::fs::remove_dir_all(self.1.parent().unwrap());
        }
    }

    fn server(limits: Limits) -> (Served, PathBuf) {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "airlink-control-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        let (shared, _) = datapath(&[]);
        (
            Served(
                ControlServer::start_with(&path, Arc::new(shared), limits).unwrap(),
                path.clone(),
            ),
            path,
        )
    }

    /// A client connection whose reads give up only after a generous 30 s.
    fn connect(path: &Path) -> (UnixStream, std::io::BufReader<UnixStream>) {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let r = std::io::BufReader::new(s.try_clone().unwrap());
        (s, r)
    }

    fn answer(r: &mut std::io::BufReader<UnixStream>) -> Value {
        let mut line = String::new();
        std::io::BufRead::read_line(r, &mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn closed(r: &mut std::io::BufReader<UnixStream>) -> bool {
        let mut rest = Vec::new();
        matches!(r.read_to_end(&mut rest), Ok(0))
            || matches!(r.read_to_end(&mut rest), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
    }

    #[test]
    fn a_line_sent_slowly_is_cut_off_at_the_size_limit() {
        let (_server, path) = server(LIMITS);
        let (mut s, mut r) = connect(&path);
        // 80 KiB of one unfinished line in pieces, each after a pause: counted all the same.
        for _ in 0..20 {
            if s.write_all(&[b' '; 4096]).is_err() {
                break; // closed already
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let e = error(answer(&mut r));
        assert!(e.contains("at most 65536 bytes"), "{e}");
        assert!(closed(&mut r));
    }

    #[test]
    fn a_line_not_finished_in_time_is_cut_off() {
        let (_server, path) = server(Limits {
            line_deadline: Duration::from_millis(300),
            ..LIMITS
        });
        let (mut s, mut r) = connect(&path);
        s.write_all(br#"{"op": "st"#).unwrap();
        let e = error(answer(&mut r));
        assert!(e.contains("must arrive within 0.3 s"), "{e}");
        assert!(closed(&mut r));
    }

    #[test]
    fn idle_connections_never_lock_out_a_new_one() {
        let (_server, path) = server(LIMITS);
        let mut idle: Vec<_> = (0..20).map(|_| connect(&path)).collect();
        let (mut s, mut r) = connect(&path);
        s.write_all(b"{\"op\": \"state\"}\n").unwrap();
        assert_eq!(answer(&mut r)["ok"], true);
        // The first idle connection made room and was told so; its requests go unanswered.
        let (first, first_r) = &mut idle[0];
        let told = answer(first_r);
        assert_eq!(
            (told["ok"].as_bool(), told["reconnect"].as_bool()),
            (Some(false), Some(true)),
            "{told}"
        );
        let _ = first.write_all(b"{\"op\": \"state\"}\n");
        assert!(closed(first_r));
        // The most recent idle connection is still served.
        let (last, last_r) = idle.last_mut().unwrap();
        last.write_all(b"{\"op\": \"state\"}\n").unwrap();
        assert_eq!(answer(last_r)["ok"], true);
    }

    #[test]
    fn a_request_that_is_not_utf8_is_answered_and_the_connection_goes_on() {
        let (_server, path) = server(LIMITS);
        let (mut s, mut r) = connect(&path);
        s.write_all(b"{\"op\": \"st\xff\xfeate\"}\n{\"op\": \"state\"}\n")
            .unwrap();
        assert_eq!(error(answer(&mut r)), "request is not UTF-8");
        assert_eq!(answer(&mut r)["ok"], true);
    }

    #[test]
    fn a_live_mark_marks_the_first_matching_row_at_or_after_it() {
        let marks = LiveMarks::default();
        marks.push(100, 0, EventKind::FlowStop);
        assert!(
            !marks.take(99, 0, "flow_stop")
                && !marks.take(150, 1, "flow_stop")
                && !marks.take(150, 0, "flow_start")
        );
        assert!(marks.take(150, 0, "flow_stop"));
        assert!(!marks.take(150, 0, "flow_stop"), "a mark is used once");
    }
}
