//! Real-time emulation: real applications and the kernel's TCP/UDP over airlink's link models.
//!
//! Two network namespaces, *client* and *server*, are joined only through a TUN device in
//! each and airlink's datapath between them, which steps the scenario's network (built by
//! [`airlink_net::Network::build`], as the simulator builds it, so every link model runs here
//! unchanged) along its shared path in each direction: downward `server → wired.down →
//! downlink → client`, upward `client → uplink → wired.up → server`. See [`datapath`] for how packets are timed, [`port`] for where they enter and leave (TUN devices, packet sockets, pcap capture) and [`ns`] for why teardown always
//! works. This crate is the only one that reads the clock and does I/O; the models stay
//! sans-IO.
//!
//! Driver contract: [`Emulation::start`] sets everything up and starts the datapath and writer
//! threads; [`Emulation::spawn`] runs commands in either namespace; [`Emulation::drain`]
//! hands over the time series; [`Emulation::stop`] (or drop) stops the threads, kills every
//! process in the namespaces and returns the summary. Call them from one long-lived thread:
//! helper processes are tied to the thread that spawned them (`PR_SET_PDEATHSIG`).
//!
//! airlink's own transports run in real time too ([`Emulation::start_flows`], see [`stack`]):
//! the scenario's flows as sender/receiver pairs over UDP sockets in the two namespaces, for
//! the protocols this kernel lacks (DCCP, Veno, TCP-AFC).

pub mod control;
pub mod datapath;
pub mod doctor;
pub mod gateway;
pub mod kernel_cc;
pub mod kernel_tcp;
pub mod native;
pub mod ns;
pub mod packet;
pub mod port;
pub mod rt;
pub mod stack;
pub mod timing;
pub mod udpgen;
pub mod writer;

use airlink_net::metrics::{Column, Recorder, Table};
use airlink_net::{FlowSummary, LinkSummary, Network};
use airlink_scenario::Scenario;
use datapath::{DatapathConfig, DatapathParts, DatapathReport, LiveCounters, StopHandle};
use ns::{Namespace, NsError, CLIENT_ADDR, SERVER_ADDR};
use packet::EmuPacket;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Why an emulation could not start or run.
#[derive(Debug)]
pub enum EmuError {
    /// The scenario parsed but cannot be built into link models.
    Build(String),
    /// Namespaces, TUN devices, sysctls or commands: the OS refused (message says what).
    Os(String),
    /// A results file could not be written.
    Output(String),
}

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmuError::Build(m) | EmuError::Os(m) | EmuError::Output(m) => f.write_str(m),
        }
    }
}
impl std::error::Error for EmuError {}

impl From<NsError> for EmuError {
    fn from(e: NsError) -> Self {
        EmuError::Os(e.0)
    }
}

/// How to run an emulation (what the scenario does not say).
#[derive(Clone, Debug)]
pub struct EmuOptions {
    /// Folder for `client.pcap` and `server.pcap`; `None` = no capture.
    pub pcap_dir: Option<PathBuf>,
    /// Bytes kept of each packet in the pcaps. Default 128: IP and TCP headers with options.
    pub snaplen: u32,
    /// Try SCHED_FIFO and mlockall for the datapath thread.
    pub realtime: bool,
    /// Guard of the hybrid wait in ns.
    pub guard_ns: u64,
    /// Lock the process's memory (mlockall) when `realtime`.
    pub mlock: bool,
    /// Memory the packets inside the emulated links of one direction may hold (queues and
    /// delay lines together, each packet counted at its allocation and queue slots); packets
    /// beyond are dropped on arrival and counted.
    pub max_in_flight_bytes: u64,
}

impl Default for EmuOptions {
    fn default() -> Self {
        EmuOptions {
            pcap_dir: None,
            snaplen: 128,
            realtime: true,
            guard_ns: timing::DEFAULT_GUARD_NS,
            mlock: true,
            max_in_flight_bytes: datapath::DEFAULT_MAX_IN_FLIGHT_BYTES,
        }
    }
}

/// The sysctls recorded in the manifest (read back from each namespace).
pub const RECORDED_SYSCTLS: &[&str] = &[
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_min_tso_segs",
    "net.core.default_qdisc",
    "net.ipv6.conf.all.disable_ipv6",
];

type DatapathResult = (
    Vec<airlink_net::build::BuiltLink<EmuPacket>>,
    DatapathReport,
    rt::RtReport,
);

/// A running emulation; see the crate documentation.
pub struct Emulation {
    scenario: Scenario,
    // Declared before the threads: dropped (killed) last is fine either way, `stop` orders it.
    server: Option<Namespace>,
    client: Option<Namespace>,
    /// Gateway mode: the interfaces' offloads, put back when the emulation stops.
    offloads: Option<gateway::Offloads>,
    stop: StopHandle,
    datapath: Option<JoinHandle<DatapathResult>>,
    writer: Option<JoinHandle<writer::WriterReport>>,
    series: Arc<Mutex<writer::Series>>,
    live: Arc<LiveCounters>,
    origin: u64,
    realtime: bool,
    pcap_dir: Option<PathBuf>,
    /// The UDP ports and protocols of airlink's own flows, once started (for native pcaps).
    flow_ports: Vec<native::FlowPorts>,
    /// airlink's own transports, when started: the thread and its time series.
    stack: Option<(stack::StackHandle, JoinHandle<stack::StackReport>)>,
    recorder: Arc<Mutex<Recorder>>,
    sysctls: BTreeMap<&'static str, Vec<(String, String)>>,
    host_changes: Vec<String>,
    /// Why the kernel's TCP cannot run the flows' congestion control (see [`kernel_cc`]):
    /// commands are refused then.
    kernel_cc_refusal: Option<String>,
    /// Flows the namespaces' default congestion control is not theirs; warned about when
    /// commands (the kernel's TCP) ran.
    kernel_cc_notes: Vec<String>,
    kernel_tcp_used: std::sync::atomic::AtomicBool,
    finished: Option<EmulationSummary>,
    /// Process CPU time when the threads started (ns), for the summary's `cpu`.
    process_cpu0: u64,
    /// Live control: what the socket's requests reach, and the socket once listening.
    control: Arc<control::Shared>,
    control_server: Option<control::ControlServer>,
    /// Wall clock (ns since the epoch) of the emulation's instant zero.
    origin_wall_ns: i128,
    /// The kernel's TCP connections sampled in both namespaces (not in gateway mode).
    kernel_tcp: Option<kernel_tcp::Sampler>,
}

/// The client's and the server's pcap files, when asked for.
fn open_pcaps(opts: &EmuOptions) -> Result<(Option<writer::Pcap>, Option<writer::Pcap>), EmuError> {
    let Some(dir) = &opts.pcap_dir else {
        return Ok((None, None));
    };
    let open = |side: &str| {
        writer::open_pcap(&dir.join(format!("{side}.pcap")), opts.snaplen).map_err(EmuError::Output)
    };
    Ok((Some(open("client")?), Some(open("server")?)))
}

/// The datapath's two ports before it starts.
struct Sides<P> {
    client: P,
    server: P,
    mtu: u32,
}

/// Which namespace: the client's or the server's.
pub use airlink_transport::Role;

impl Emulation {
    /// Creates the namespaces and TUN devices, applies `[emulation]`, starts the threads.
    pub fn start(s: &Scenario, opts: &EmuOptions) -> Result<Emulation, EmuError> {
        // The defaults that depend on other values (uplink, receive window), as in simulation.
        let resolved = airlink_net::build::resolve(s).map_err(|e| EmuError::Build(e.0))?;
        let s = &resolved;
        let network = Network::<EmuPacket>::build(s).map_err(|e| EmuError::Build(e.0))?;
        // The datapath tells a flow's packets by their server port: airlink's own flows by
        // theirs, the kernel's applications by the port the scenario gives them.
        let mut ports: Vec<(u16, u16)> = (0..s.flow.len())
            .map(|i| (stack::ports(i).0, i as u16))
            .collect();
        ports.extend(
            s.flow
                .iter()
                .enumerate()
                .filter_map(|(i, f)| f.port.map(|p| (p, i as u16))),
        );
        let e = &s.emulation;
        // Output files first: a bad path is refused before anything is created.
        let (pc, ps) = open_pcaps(opts)?;
        let server = Namespace::create("server")?;
        let client = Namespace::create("client")?;
        let server_fd = ns::configure(&server, SERVER_ADDR, CLIENT_ADDR, e.mtu)?;
        let client_fd = ns::configure(&client, CLIENT_ADDR, SERVER_ADDR, e.mtu)?;
        let mut sysctls = BTreeMap::new();
        let mut host_changes = Vec::new();
        // The flows' congestion control for the kernel's TCP; refused only when the kernel's
        // TCP is used (`spawn`): airlink's own TCP runs any.
        let choice = kernel_cc::KernelChoice::of(s);
        let mut kernel_cc_refusal = None;
        for (label, n) in [("client", &client), ("server", &server)] {
            let set = match choice.kernel {
                Some(cc) => {
                    allow_congestion_control(cc, &mut host_changes);
                    n.set_sysctl("net.ipv4.tcp_congestion_control", cc)
                        .map_err(|err| err.to_string())
                }
                None => Err(String::new()),
            };
            if let Err(why) = set {
                let available =
                    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                        .unwrap_or_default();
                kernel_cc_refusal = Some(choice.refusal(&available, &why));
            }
            for (k, v) in &e.sysctl {
                n.set_sysctl(k, v).map_err(|err| {
                    EmuError::Os(format!("emulation.sysctl in the {label} namespace: {err}"))
                })?;
            }
            sysctls.insert(label, n.get_sysctls(RECORDED_SYSCTLS));
        }
        let sides = Sides {
            client: port::TunPort(client_fd),
            server: port::TunPort(server_fd),
            mtu: e.mtu,
        };
        let mut emulation = Self::launch(s, network, ports.clone(), (pc, ps), sides, opts)?;
        emulation.kernel_tcp = emulation.sample_kernel_tcp(&client, &server, ports)?;
        emulation.server = Some(server);
        emulation.client = Some(client);
        emulation.sysctls = sysctls;
        emulation.host_changes = host_changes;
        emulation.kernel_cc_refusal = kernel_cc_refusal;
        emulation.kernel_cc_notes = choice.others;
        Ok(emulation)
    }

    /// Starts a gateway: the scenario's links between two existing interfaces (see
    /// [`gateway`]); the hosts on either side are the client and the server.
    pub fn start_gateway(
        s: &Scenario,
        opts: &EmuOptions,
        client_iface: &str,
        server_iface: &str,
    ) -> Result<Emulation, EmuError> {
        let resolved = airlink_net::build::resolve(s).map_err(|e| EmuError::Build(e.0))?;
        let s = &resolved;
        let network = Network::<EmuPacket>::build(s).map_err(|e| EmuError::Build(e.0))?;
        let ports: Vec<(u16, u16)> = s
            .flow
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.port.map(|p| (p, i as u16)))
            .collect();
        let pcaps = open_pcaps(opts)?;
        let opened = gateway::open(client_iface, server_iface)?;
        let (client, server) = gateway::Sides::ports(opened.client, opened.server);
        let sides = Sides {
            client,
            server,
            mtu: opened.mtu,
        };
        let mut emulation = Self::launch(s, network, ports, pcaps, sides, opts)?;
        emulation.offloads = Some(opened.offloads);
        Ok(emulation)
    }

    /// Starts the writer and datapath threads between two ports.
    fn launch<P: port::Port + Send + 'static>(
        s: &Scenario,
        network: Network<EmuPacket>,
        ports: Vec<(u16, u16)>,
        (pc, ps): (Option<writer::Pcap>, Option<writer::Pcap>),
        sides: Sides<P>,
        opts: &EmuOptions,
    ) -> Result<Emulation, EmuError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1 << 16);
        let record_bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let series = Arc::new(Mutex::new(writer::Series::default()));
        let process_cpu0 = timing::process_cpu_ns();
        let origin = timing::monotonic_ns();
        let realtime_offset = timing::realtime_ns() as i128 - timing::monotonic_ns() as i128;
        let writer = {
            let series = series.clone();
            let record_bytes = record_bytes.clone();
            std::thread::Builder::new()
                .name("airlink-writer".into())
                .spawn(move || {
                    writer::run(rx, record_bytes, pc, ps, series, origin, realtime_offset)
                })
                .map_err(|e| EmuError::Os(format!("cannot start the writer thread: {e}")))?
        };
        let (control_mailbox, control_inbox) =
            control::mailbox().map_err(|e| EmuError::Os(e.to_string()))?;
        let params = airlink_net::build::link_parameters(s).map_err(|e| EmuError::Build(e.0))?;
        let snaplen = if opts.pcap_dir.is_some() {
            opts.snaplen
        } else {
            0
        };
        let captured = |p: P, facing: port::Facing| {
            port::Captured::new(p, facing, snaplen, tx.clone(), record_bytes.clone())
        };
        let (client, server) = (
            captured(sides.client, port::Facing::Client),
            captured(sides.server, port::Facing::Server),
        );
        let cfg = DatapathConfig {
            guard_ns: opts.guard_ns,
            sample_interval: s.sample_interval.0,
            rt_fifo: opts.realtime,
            mlock: opts.realtime && opts.mlock,
            max_in_flight_bytes: opts.max_in_flight_bytes,
        };
        let parts = DatapathParts {
            links: network.links,
            paths: network.paths,
            shared: network.shared,
            ports,
            changes: network.changes,
            client,
            server,
            origin_mono_ns: origin,
            records: tx,
            cfg,
            mtu: sides.mtu,
            control: control_inbox,
            params,
        };
        let (stop, run) = datapath::prepare(parts).map_err(|e| EmuError::Os(e.to_string()))?;
        let live = Arc::new(LiveCounters::default());
        let datapath = {
            let live = live.clone();
            std::thread::Builder::new()
                .name("airlink-datapath".into())
                .spawn(move || run(&live))
                .map_err(|e| EmuError::Os(format!("cannot start the datapath thread: {e}")))?
        };
        Ok(Emulation {
            scenario: s.clone(),
            server: None,
            client: None,
            offloads: None,
            stop,
            datapath: Some(datapath),
            writer: Some(writer),
            series,
            live,
            origin,
            realtime: opts.realtime,
            pcap_dir: opts.pcap_dir.clone(),
            flow_ports: Vec::new(),
            stack: None,
            recorder: Arc::new(Mutex::new(Recorder {
                enabled: true,
                ..Default::default()
            })),
            sysctls: BTreeMap::new(),
            host_changes: Vec::new(),
            kernel_cc_refusal: None,
            kernel_cc_notes: Vec::new(),
            kernel_tcp_used: Default::default(),
            finished: None,
            process_cpu0,
            control: Arc::new(control::Shared::new(s.clone(), control_mailbox)),
            control_server: None,
            origin_wall_ns: origin as i128 + realtime_offset,
            kernel_tcp: None,
        })
    }

    /// Starts sampling the kernel's TCP in both namespaces, unless the scenario turns it off.
    fn sample_kernel_tcp(
        &self,
        client: &Namespace,
        server: &Namespace,
        ports: Vec<(u16, u16)>,
    ) -> Result<Option<kernel_tcp::Sampler>, EmuError> {
        let interval_ns = self.scenario.emulation.tcp_info_interval.0.as_nanos();
        if interval_ns == 0 {
            return Ok(None);
        }
        let ip = |a: &str| a.parse().expect("the namespaces' addresses are IPv4");
        let cfg = kernel_tcp::SamplerConfig {
            interval_ns,
            origin_mono_ns: self.origin,
            ports,
        };
        let sides = [
            (Role::Client, client, ip(SERVER_ADDR)),
            (Role::Server, server, ip(CLIENT_ADDR)),
        ];
        Ok(Some(kernel_tcp::Sampler::start(
            sides,
            cfg,
            self.control.kernel_tcp.clone(),
        )?))
    }

    pub fn server_address(&self) -> &'static str {
        SERVER_ADDR
    }
    pub fn client_address(&self) -> &'static str {
        CLIENT_ADDR
    }

    /// Sysctls read back from each namespace after set-up, for the manifest.
    pub fn sysctls(&self) -> &BTreeMap<&'static str, Vec<(String, String)>> {
        &self.sysctls
    }

    /// Changes made outside the namespaces (reported in the manifest).
    pub fn host_changes(&self) -> &[String] {
        &self.host_changes
    }

    /// Listens for live control at `path` (a Unix socket; see [`control`]) until the run stops.
    pub fn listen(&mut self, path: &std::path::Path) -> Result<(), EmuError> {
        if self.control_server.is_some() {
            return Err(EmuError::Os(
                "the emulation listens for control already".into(),
            ));
        }
        if self.finished.is_some() {
            return Err(EmuError::Os("the emulation has stopped".into()));
        }
        self.control_server =
            Some(control::ControlServer::start(path, self.control.clone()).map_err(EmuError::Os)?);
        Ok(())
    }

    /// Answers one control request (a line of the socket's protocol) without the socket.
    pub fn control(&self, request: &str) -> String {
        control::handle(&self.control, request).to_string()
    }

    /// Wake-ups of the datapath so far (for idle measurements).
    pub fn wakeups(&self) -> u64 {
        self.live.wakeups.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Starts `sh -c command` in a namespace; `AIRLINK_SERVER` and `AIRLINK_CLIENT` are set.
    pub fn spawn(
        &self,
        role: Role,
        command: &str,
        stdout: Option<File>,
        stderr: Option<File>,
        stdin_null: bool,
    ) -> Result<Child, EmuError> {
        let n = match role {
            Role::Client => self.client.as_ref(),
            Role::Server => self.server.as_ref(),
        }
        .ok_or_else(|| EmuError::Os("the emulation has stopped".into()))?;
        // With airlink's own flows running, a command is a helper beside them, not the
        // scenario's TCP: only the kernel's flows need the control the scenario names.
        if let Some(refusal) = self
            .kernel_cc_refusal
            .as_ref()
            .filter(|_| self.flow_ports.is_empty())
        {
            return Err(EmuError::Os(refusal.clone()));
        }
        self.kernel_tcp_used
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let env = vec![
            ("AIRLINK_SERVER".to_string(), SERVER_ADDR.to_string()),
            ("AIRLINK_CLIENT".to_string(), CLIENT_ADDR.to_string()),
            (
                "AIRLINK_SIDE".to_string(),
                if role == Role::Client {
                    "client"
                } else {
                    "server"
                }
                .to_string(),
            ),
        ];
        Ok(n.spawn(command, &env, stdout, stderr, stdin_null)?)
    }

    /// Runs the scenario's flows with airlink's own transports (see [`stack`]): a UDP socket
    /// pair per flow, the server's in the server namespace, the client's in the client's.
    /// The flows start at their start times on the emulation's clock.
    pub fn start_flows(&mut self) -> Result<(), EmuError> {
        if !self.flow_ports.is_empty() {
            return Err(EmuError::Os("the flows are already running".into()));
        }
        let (Some(client), Some(server)) = (self.client.as_ref(), self.server.as_ref()) else {
            return Err(EmuError::Os("the emulation has stopped".into()));
        };
        if self.scenario.flow.is_empty() {
            return Err(EmuError::Build(
                "the scenario has no [[flow]] to run".into(),
            ));
        }
        // Every flow is checked before any socket exists.
        let mut built = Vec::with_capacity(self.scenario.flow.len());
        for (i, f) in self.scenario.flow.iter().enumerate() {
            let flow = airlink_net::build::scenario_flow(f, i, self.scenario.seed)
                .map_err(|e| EmuError::Build(e.0))?;
            let protocol = match f.protocol {
                airlink_scenario::Protocol::Tcp => airlink_transport::codec::Protocol::Tcp,
                airlink_scenario::Protocol::Udp => airlink_transport::codec::Protocol::Udp,
                airlink_scenario::Protocol::Dccp => airlink_transport::codec::Protocol::Dccp,
            };
            // TCP never sends what the path would fragment; UDP may (as iperf does). DCCP's
            // packets were checked against the MTU with the scenario.
            let mtu = self.scenario.emulation.mtu as u64;
            let largest = match f.protocol {
                airlink_scenario::Protocol::Tcp => f.tcp.mtu.unwrap_or(1500) as u64,
                airlink_scenario::Protocol::Dccp | airlink_scenario::Protocol::Udp => 0,
            };
            if largest > mtu {
                return Err(EmuError::Build(format!(
                    "flow {i}: its packets reach {largest} B, more than the emulated MTU of {mtu} B \
                     (emulation.mtu): lower flow.tcp.mtu, or raise emulation.mtu"
                )));
            }
            built.push((flow, protocol));
        }
        airlink_net::host_budget::attach(&self.scenario, built.iter_mut().map(|(f, _)| f))
            .map_err(|e| EmuError::Build(e.0))?;
        let mut flows = Vec::with_capacity(built.len());
        let mut flow_ports = Vec::with_capacity(built.len());
        for (i, (flow, protocol)) in built.into_iter().enumerate() {
            let (server_port, client_port) = stack::ports(i);
            flow_ports.push(native::FlowPorts {
                server: server_port,
                client: client_port,
                protocol,
            });
            flows.push(stack::StackFlow {
                flow,
                protocol,
                client: flow_socket(client, CLIENT_ADDR, client_port, SERVER_ADDR, server_port)?,
                server: flow_socket(server, SERVER_ADDR, server_port, CLIENT_ADDR, client_port)?,
            });
        }
        let (mailbox, inbox) = control::mailbox().map_err(|e| EmuError::Os(e.to_string()))?;
        let parts = stack::StackParts {
            control: inbox,
            marks: self.control.live_flow_events.clone(),
            flows,
            origin_mono_ns: self.origin,
            stop_at: airlink_engine::Instant::ZERO + self.scenario.stop.0,
            sample_interval: self.scenario.sample_interval.0,
            recorder: self.recorder.clone(),
            realtime: self.realtime,
        };
        let (handle, run) = stack::prepare(parts).map_err(|e| EmuError::Os(e.to_string()))?;
        let thread = std::thread::Builder::new()
            .name("airlink-stack".into())
            .spawn(run)
            .map_err(|e| EmuError::Os(format!("cannot start the transport thread: {e}")))?;
        self.stack = Some((handle, thread));
        *self.control.stack.lock().unwrap_or_else(|p| p.into_inner()) = Some(mailbox);
        self.flow_ports = flow_ports;
        Ok(())
    }

    /// The flows started by [`Self::start_flows`] have finished (or the stop time passed).
    pub fn flows_finished(&self) -> bool {
        self.stack.as_ref().is_some_and(|(h, _)| h.finished())
    }

    /// The time series collected so far (`links`, `events`, and with [`Self::start_flows`]
    /// `flows`, `intervals`, `rtt`), emptied, in the simulator's columns; emulation fills in
    /// `events`' `live` (1: a change made through the control socket) and `wall_time_ns`
    /// (the wall clock at the event's emulated instant, ns since the epoch).
    pub fn drain(&self) -> Vec<(&'static str, Table)> {
        let mut tables = self
            .series
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain();
        // The kernel's TCP, unless airlink's own flows fill the table.
        if let (Some(k), true) = (&self.kernel_tcp, self.flow_ports.is_empty()) {
            tables.push(("flows", k.drain()));
        }
        // Also after `stop`: the last rows are drained then.
        if !self.flow_ports.is_empty() {
            let flows = self
                .recorder
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain();
            for (name, table) in flows {
                match name {
                    "flows" | "intervals" | "rtt" => tables.push((name, table)),
                    // The flows' starts and stops join the datapath's events.
                    "events" => {
                        let table = self.mark_live(table);
                        match tables.iter_mut().find(|(n, _)| *n == "events") {
                            Some((_, events)) => events.append(table),
                            None => tables.push((name, table)),
                        }
                    }
                    _ => {}
                }
            }
        }
        for (name, table) in tables.iter_mut() {
            if *name == "events" {
                let wall = match table.columns.first() {
                    Some(("time_ns", Column::U64(t))) => t
                        .iter()
                        .map(|&t| (self.origin_wall_ns + t as i128).max(0) as u64)
                        .collect(),
                    _ => Vec::new(),
                };
                if let Some(column) = table.column_mut("wall_time_ns") {
                    *column = Column::U64(wall);
                }
            }
        }
        tables
    }

    /// The `live` column of the stack's events (flow starts and stops): 1 for those made
    /// through the control socket.
    fn mark_live(&self, mut table: Table) -> Table {
        let col = |name: &str| {
            table
                .columns
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| c)
        };
        let live = match (col("time_ns"), col("flow"), col("kind")) {
            (Some(Column::U64(t)), Some(Column::U64(f)), Some(Column::Str(k))) => t
                .iter()
                .zip(f)
                .zip(k)
                .map(|((&t, &f), k)| self.control.live_flow_events.take(t, f as u32, k) as u64)
                .collect(),
            _ => Vec::new(),
        };
        if let Some(column) = table.column_mut("live") {
            *column = Column::U64(live);
        }
        table
    }

    /// Stops the datapath and writer, kills everything in the namespaces, returns the summary.
    pub fn stop(&mut self) -> EmulationSummary {
        if let Some(v) = &self.finished {
            return v.clone();
        }
        // No request reaches a run that is stopping; the socket goes first.
        self.control.end();
        if let Some(k) = self.kernel_tcp.as_mut() {
            k.stop();
        }
        if let Some(mut server) = self.control_server.take() {
            server.stop();
        }
        // airlink's own endpoints first (their sockets hold the namespaces), then the
        // processes, so nothing is left writing into a device that is going away.
        let stack = self.stack.take().and_then(|(h, thread)| {
            h.stop();
            thread.join().ok()
        });
        let checksum_drops: BTreeMap<&'static str, u64> =
            [("client", &self.client), ("server", &self.server)]
                .into_iter()
                .filter_map(|(label, n)| Some((label, udp_checksum_errors(n.as_ref()?)?)))
                .collect();
        // Before the namespaces go: what their kernels dropped at the TUN devices.
        let tun: BTreeMap<&'static str, TunCounters> =
            [("client", &self.client), ("server", &self.server)]
                .into_iter()
                .filter_map(|(label, n)| Some((label, tun_counters(n.as_ref()?)?)))
                .collect();
        for n in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            drop(n);
        }
        self.stop.stop();
        let (links, report, rt) = match self.datapath.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => (
                Vec::new(),
                DatapathReport::default(),
                rt::RtReport::default(),
            ),
        };
        let writer = self
            .writer
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        drop(self.offloads.take());
        let process_cpu_s =
            timing::process_cpu_ns().saturating_sub(self.process_cpu0) as f64 * 1e-9;
        let mut summary = summary(&self.scenario, &links, report, rt, &writer, tun);
        if self
            .kernel_tcp_used
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            summary
                .warnings
                .extend(self.kernel_cc_notes.iter().cloned());
        }
        // CPU of every airlink thread, not only the datapath's: the process's total covers the
        // writer, airlink's own endpoints and the controlling thread (Python's) too.
        summary.cpu = Cpu {
            datapath_s: summary.datapath.cpu_s,
            writer_s: writer.cpu_s,
            stack_s: stack.as_ref().map(|f| f.cpu_s),
            process_s: process_cpu_s,
        };
        if let (Some(dir), false) = (&self.pcap_dir, self.flow_ports.is_empty()) {
            // airlink's own TCP and DCCP appear in the captures as the real protocols.
            let native = ["client", "server"].map(|side| {
                (
                    side,
                    native::rewrite_pcap(&dir.join(format!("{side}.pcap")), &self.flow_ports)
                        .into(),
                )
            });
            summary.pcap.native_packets = Some(native.into_iter().collect());
        }
        if let Some(mut stack) = stack {
            summary.flows = Some(std::mem::take(&mut stack.flows));
            // Corrupted datagrams never reach airlink's endpoints: the kernels count them.
            summary.stack = Some(StackSummary {
                report: stack,
                udp_checksum_drops: checksum_drops,
            });
        }
        self.finished = Some(summary.clone());
        summary
    }
}

/// A connected, non-blocking UDP socket in namespace `n`, with buffers large enough that the
/// socket never drops what the emulated link delivers in a burst.
fn flow_socket(
    n: &Namespace,
    local: &str,
    port: u16,
    peer: &str,
    peer_port: u16,
) -> Result<std::net::UdpSocket, EmuError> {
    let socket = n.within(|| {
        let err = |e: std::io::Error| {
            NsError(format!(
                "UDP socket {local}:{port} in the {} namespace: {e}",
                n.label
            ))
        };
        let s = std::net::UdpSocket::bind((local, port)).map_err(err)?;
        s.connect((peer, peer_port)).map_err(err)?;
        s.set_nonblocking(true).map_err(err)?;
        Ok(s)
    })?;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
        let size: libc::c_int = 4 << 20;
        // SAFETY: a valid socket and an int option; refused without CAP_NET_ADMIN, then the
        // default size stays (a smaller burst tolerance, nothing else).
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&socket),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    Ok(socket)
}

/// A TUN device's counters as its namespace's kernel keeps them (`/proc/net/dev`, the
/// figures of `ip -s link`): packets the kernel dropped there never reached airlink.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct TunCounters {
    /// Packets from the applications to airlink (read by the datapath) and dropped before.
    pub tx_packets: u64,
    pub tx_dropped: u64,
    pub tx_errors: u64,
    /// Packets from airlink to the applications (written by the datapath) and dropped after.
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub rx_errors: u64,
}

fn tun_counters(n: &Namespace) -> Option<TunCounters> {
    let dev = n
        .within(|| {
            std::fs::read_to_string("/proc/thread-self/net/dev").map_err(|e| NsError(e.to_string()))
        })
        .ok()?;
    let line = dev
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{}:", ns::IFNAME)))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
    (v.len() >= 12).then(|| TunCounters {
        rx_packets: v[1],
        rx_errors: v[2],
        rx_dropped: v[3],
        tx_packets: v[9],
        tx_errors: v[10],
        tx_dropped: v[11],
    })
}

/// `Udp: InCsumErrors` of a namespace's kernel: datagrams dropped for a bad checksum.
fn udp_checksum_errors(n: &Namespace) -> Option<u64> {
    let snmp = n
        .within(|| {
            std::fs::read_to_string("/proc/thread-self/net/snmp")
                .map_err(|e| NsError(e.to_string()))
        })
        .ok()?;
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next()?, udp.next()?);
    let at = names.split_whitespace().position(|w| w == "InCsumErrors")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// A namespace other than the initial one may only make a congestion control its default if
/// the host lists it in `net.ipv4.tcp_allowed_congestion_control` (else EPERM). Adds it there
/// when it is missing (a host-wide change, reported).
fn allow_congestion_control(cc: &str, changes: &mut Vec<String>) {
    const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
    let Ok(current) = std::fs::read_to_string(ALLOWED) else {
        return;
    };
    if current.split_whitespace().any(|c| c == cc) {
        return;
    }
    let wanted = format!("{} {cc}", current.trim());
    if std::fs::write(ALLOWED, &wanted).is_ok() {
        changes.push(format!(
            "net.ipv4.tcp_allowed_congestion_control: \"{}\" -> \"{wanted}\"",
            current.trim()
        ));
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An emulation's summary: per-link counters with the simulator's fields, airlink's own flows
/// as the simulator sums them up, then what only emulation has (the datapath's timing, drops
/// outside the links, the kernels' counters).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct EmulationSummary {
    pub scenario: String,
    pub seed: u64,
    pub mode: &'static str,
    pub links: Vec<LinkSummary>,
    /// airlink's own flows (none with the kernel's applications).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<FlowSummary>>,
    pub drops: Drops,
    pub warnings: Vec<String>,
    pub datapath: DatapathReport,
    pub realtime: Realtime,
    pub pcap: PcapSummary,
    pub cpu: Cpu,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<StackSummary>,
}

impl EmulationSummary {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("summaries serialise")
    }
}

/// Drops outside the links: none of them is the scenario's doing.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Drops {
    /// On arrival at a direction whose links held the emulator's memory bound already.
    pub in_flight_limit: ByDirection,
    /// Packets read from a TUN device that were not IP.
    pub malformed: BySide,
    pub write_errors: u64,
    /// What the namespaces' kernels dropped at the TUN devices.
    pub kernel: BTreeMap<&'static str, TunCounters>,
    /// Records (pcap packets, samples, events) the writer could not keep up with, and rows of
    /// the time series beyond what may wait to be drained.
    pub records_lost: u64,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ByDirection {
    pub downlink: u64,
    pub uplink: u64,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct BySide {
    pub client: u64,
    pub server: u64,
}

/// SCHED_FIFO and timer slack of the datapath: whether all was granted, what was refused.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Realtime {
    pub granted: bool,
    pub refused: rt::RtReport,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct PcapSummary {
    pub records: u64,
    pub errors: Vec<String>,
    /// airlink's own TCP and DCCP rewritten as the real protocols: packets per capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_packets: Option<BTreeMap<&'static str, Rewritten>>,
}

/// The packets of a rewritten capture, or why it could not be rewritten.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Rewritten {
    Packets(u64),
    Failed { error: String },
}

impl From<Result<u64, String>> for Rewritten {
    fn from(r: Result<u64, String>) -> Self {
        r.map_or_else(|error| Rewritten::Failed { error }, Rewritten::Packets)
    }
}

/// CPU time of airlink's threads, s.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Cpu {
    pub datapath_s: f64,
    pub writer_s: f64,
    pub stack_s: Option<f64>,
    pub process_s: f64,
}

/// airlink's own endpoints in emulation.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct StackSummary {
    #[serde(flatten)]
    pub report: stack::StackReport,
    /// Corrupted datagrams the kernels dropped before airlink's endpoints saw them.
    pub udp_checksum_drops: BTreeMap<&'static str, u64>,
}

/// The emulation summary; `cpu`, `flows`, `stack` and the rewritten captures are filled in by
/// [`Emulation::stop`].
fn summary(
    s: &Scenario,
    links: &[airlink_net::build::BuiltLink<EmuPacket>],
    report: DatapathReport,
    rt: rt::RtReport,
    writer: &writer::WriterReport,
    tun: BTreeMap<&'static str, TunCounters>,
) -> EmulationSummary {
    // The receiving kernel drops corrupted packets; airlink does not see it.
    let links: Vec<LinkSummary> = links
        .iter()
        .zip(&report.outage_drops)
        .map(|(l, &outage_drops)| LinkSummary {
            outage_drops,
            ..LinkSummary::of(l.name, l.model, l.link.as_ref(), 0)
        })
        .collect();
    // Every drop the scenario did not ask for, by cause.
    let kernel_drops: u64 = tun
        .values()
        .map(|t| t.tx_dropped + t.rx_dropped + t.tx_errors + t.rx_errors)
        .sum();
    let mut warnings = Vec::new();
    for (dir, n) in ["downlink", "uplink"].iter().zip(report.in_flight_drops) {
        if n > 0 {
            warnings.push(format!(
                "{n} packets dropped on arrival at the {dir}: its links held {} bytes already (the emulator's memory bound)",
                report.max_in_flight_bytes
            ));
        }
    }
    if kernel_drops > 0 {
        warnings.push(format!(
            "the kernels dropped {kernel_drops} packets at the TUN devices (see drops.kernel)"
        ));
    }
    if report.records_lost > 0 {
        warnings.push(format!(
            "{} records (pcap packets, samples, events) were lost: the writer could not keep up; the pcaps and series are incomplete",
            report.records_lost
        ));
    }
    if writer.rows_lost > 0 {
        warnings.push(format!(
            "{} rows of the time series (samples, events) were lost: {} rows waited to be drained already; the series are incomplete",
            writer.rows_lost,
            writer::MAX_SERIES_ROWS
        ));
    }
    EmulationSummary {
        scenario: s.name.clone(),
        seed: s.seed,
        mode: "emulation",
        links,
        flows: None,
        drops: Drops {
            in_flight_limit: ByDirection {
                downlink: report.in_flight_drops[0],
                uplink: report.in_flight_drops[1],
            },
            malformed: BySide {
                client: report.malformed_client,
                server: report.malformed_server,
            },
            write_errors: report.write_errors,
            kernel: tun,
            records_lost: report.records_lost + writer.rows_lost,
        },
        warnings,
        realtime: Realtime {
            granted: rt.all_granted(),
            warnings: rt.warnings(),
            refused: rt,
        },
        datapath: report,
        pcap: PcapSummary {
            records: writer.pcap_records,
            errors: writer.errors.clone(),
            native_packets: None,
        },
        cpu: Cpu::default(),
        stack: None,
    }
}
