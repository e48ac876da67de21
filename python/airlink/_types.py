"""Typed results of airlink's core (`airlink._core`): one TypedDict per Rust struct the core
returns, with the struct's doc comments. Generated from the structs' JSON Schema by
scripts/gen_result_types.py: do not edit (tests/test_result_types.py fails when it is stale)."""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "AqmSummary",
    "ByDirection",
    "BySide",
    "CellUserSummary",
    "Command",
    "Cpu",
    "DatapathReport",
    "Delivery",
    "DoctorCheck",
    "Drops",
    "EcnSummary",
    "EmulationSummary",
    "FlowSummary",
    "Iperf3Results",
    "IperfSummary",
    "Lateness",
    "LinkSummary",
    "Method",
    "PcapSummary",
    "Realtime",
    "Rewritten",
    "RewrittenObject",
    "RtReport",
    "RunSummary",
    "ScenarioKey",
    "Side",
    "StackSummary",
    "TimingModelRow",
    "TimingStats",
    "TunCounters",
    "UdpgenRecvReport",
    "UdpgenSendReport",
]


class DoctorCheck(TypedDict):
    """One check: its name, whether it passed, what was found, and whether emulation needs it."""

    detail: str
    name: str
    ok: bool
    required: bool


Side: TypeAlias = Literal["client", "server"]


class Command(TypedDict):
    """One command run in a namespace."""

    #: As given.
    command: str
    #: Null when the run stopped before the command ended by itself.
    end_s: float | None
    #: Negative: killed by that signal; null: still running when the run stopped.
    exit_code: int | None
    #: As it ran, when airlink changed it (added iperf3's `-J`).
    ran: NotRequired[str | None]
    side: Side
    #: Seconds after the run's start.
    start_s: float


class Cpu(TypedDict):
    """CPU time of airlink's threads, s."""

    datapath_s: float
    process_s: float
    stack_s: float | None
    writer_s: float


class Delivery(TypedDict):
    """Delivery statistics of one direction (packets written to one TUN device)."""

    actual_rate_bps: float | None
    bytes: int
    #: Bytes after the first packet, for rates between the first and last departure.
    bytes_after_first: int
    first_actual_s: float | None
    #: First and last due instant (s since the origin) and actual write times.
    first_due_s: float | None
    last_actual_s: float | None
    last_due_s: float | None
    packets: int
    #: Rate between the first and the last packet: from the link's schedule and as written.
    scheduled_rate_bps: float | None


class Lateness(TypedDict):
    """Lateness of packet writes against their due instants, in microseconds."""

    max_us: float
    mean_us: float
    p50_us: float
    p999_us: float
    p99_us: float
    packets: int


class DatapathReport(TypedDict):
    """What the datapath saw, returned when it stops."""

    cpu_s: float
    downlink: Delivery
    duration_s: float
    #: The guard of the hybrid wait at the end (it adapts to the timer wake-up latency).
    guard_us: float
    #: Wake-ups with nothing to do: no packet read or written, no timer due.
    idle_wakeups: int
    #: Packets dropped on arrival because their direction's links held `max_in_flight_bytes`
    #: already: [downlink (from the server), uplink (from the client)].
    in_flight_drops: tuple[int, int]
    #: The most memory the packets in the links of each direction held at once (bytes, as
    #: [`held_bytes`] counts them).
    in_flight_max_bytes: tuple[int, int]
    lateness: Lateness
    #: Packets read from a TUN device that were not IP (counted, dropped).
    malformed_client: int
    malformed_server: int
    #: The bound in force.
    max_in_flight_bytes: int
    packets_read_client: int
    packets_read_server: int
    #: Gateway mode: frames other than IPv4/IPv6 (ARP, ...) passed straight to the other side.
    passed_through: int
    #: Records (pcap, samples, events) the writer thread could not take in time.
    records_lost: int
    #: Part of `cpu_s` spent spinning before deadlines (the hybrid wait's last guard).
    spin_s: float
    uplink: Delivery
    wakeups: int
    #: Writes to a TUN device that failed (counted, dropped).
    write_errors: int


class ByDirection(TypedDict):
    downlink: int
    uplink: int


class BySide(TypedDict):
    client: int
    server: int


class TunCounters(TypedDict):
    """A TUN device's counters as its namespace's kernel keeps them (`/proc/net/dev`, the
    figures of `ip -s link`): packets the kernel dropped there never reached airlink."""

    rx_dropped: int
    rx_errors: int
    #: Packets from airlink to the applications (written by the datapath) and dropped after.
    rx_packets: int
    tx_dropped: int
    tx_errors: int
    #: Packets from the applications to airlink (read by the datapath) and dropped before.
    tx_packets: int


class Drops(TypedDict):
    """Drops outside the links: none of them is the scenario's doing."""

    #: On arrival at a direction whose links held the emulator's memory bound already.
    in_flight_limit: ByDirection
    #: What the namespaces' kernels dropped at the TUN devices.
    kernel: dict[str, TunCounters]
    #: Packets read from a TUN device that were not IP.
    malformed: BySide
    #: Records (pcap packets, samples, events) the writer could not keep up with, and rows of
    #: the time series beyond what may wait to be drained.
    records_lost: int
    write_errors: int


class EcnSummary(TypedDict):
    """A TCP flow's ECN (RFC 3168) counts."""

    #: Data segments that reached the receiver marked Congestion Experienced.
    ce_marks_received: int
    #: The sender's window reductions for an ECN-Echo (at most one per round trip).
    ece_reductions: int
    #: Whether both ends agreed to use ECN on the handshake.
    negotiated: bool


class IperfSummary(TypedDict):
    """iperf's receiver totals (spec D.8)."""

    #: Datagrams the sender numbered (the highest id received).
    datagrams: int
    #: RFC 3550 interarrival jitter at the end of the flow.
    jitter_ms: float
    loss_pct: float
    lost: int
    out_of_order: int
    received: int
    #: Payload throughput from the first to the last arrival.
    throughput_bps: float


class FlowSummary(TypedDict):
    """One flow's counters, as its sender and receiver saw them."""

    #: Bytes delivered in order to the receiving application.
    bytes_delivered: int
    #: Bytes the application set out to transfer (`None`: until the stop time).
    bytes_requested: int | None
    #: Packets of the flow dropped by a receiver's checksum (bit errors).
    checksum_drops: int
    #: A flow with a size delivered all its bytes before the stop time; a flow without one
    #: (it runs until the stop time by design) delivered data.
    completed: bool
    congestion: str
    data_segments_sent: int
    duration_s: float | None
    #: ECN's counts, for a flow with `ecn = true` (absent otherwise).
    ecn: NotRequired[EcnSummary | None]
    #: Time of the last delivery to the application.
    end_s: float | None
    fast_recoveries: int
    #: Application goodput from the flow's start to its last delivery.
    goodput_bps: float | None
    #: Goodput between the deliveries that first reached 10 % and 90 % of the transfer:
    #: the steady rate, without connection set-up and slow start.
    goodput_steady_bps: float | None
    id: int
    #: What iperf would report at the client (UDP and DCCP flows).
    iperf: IperfSummary | None
    #: The flow's packets lost on links, either direction: dropped there (queue, random
    #: loss) or delivered corrupted and caught by the receiver's checksum. Counted by the
    #: simulator, which knows each packet's flow; `null` in emulation.
    link_losses: int | None
    #: The scenario's name for the flow, if it gave one.
    name: NotRequired[str | None]
    protocol: str
    #: Retransmitted over all data segments sent, in per cent.
    retransmission_pct: float
    retransmissions: int
    #: Packets the sender transmitted (data and control; TCP segments, DCCP packets, UDP
    #: datagrams), and of them retransmissions (TCP only: DCCP and UDP never retransmit).
    segments_sent: int
    #: With a `device` limit: packets its host refused (UDP datagrams dropped at the sender).
    sender_drops: NotRequired[int | None]
    #: TCP data segments (or FINs) that reached the receiver when it already had them,
    #: counted at the receiver: retransmissions that were not needed.
    spurious_retransmissions: int
    start_s: float
    timeouts: int


class Iperf3Results(TypedDict):
    """iperf3's reports, parsed by `airlink.iperf` (their shape is iperf3's, not airlink's)."""

    #: One entry per iperf3 stream.
    flows: list[dict[str, Any]]
    #: Which file each side's report was read from.
    reports: dict[str, str]
    warnings: list[str]


class AqmSummary(TypedDict):
    """A queue discipline's part of a link's summary."""

    #: Packets the discipline's rule dropped.
    aqm_drops: int
    #: ECN-capable packets the rule marked CE instead.
    aqm_marks: int
    #: Packets handed to the transmitter, and their time in the queue (ms; within 1.6 %).
    dequeued: int
    #: `droptail`, `codel`, `fq_codel`, `pie` or `red`.
    kind: str
    #: Arrivals dropped because the queue was over its limit.
    overflow_drops: int
    sojourn_mean_ms: float | None
    sojourn_p50_ms: float | None
    sojourn_p95_ms: float | None
    sojourn_p99_ms: float | None


class CellUserSummary(TypedDict):
    """One user of a multi-user cell."""

    frame_errors: int
    interval_max_s: float
    #: The interval between two of the user's turns: mean, standard deviation, largest.
    interval_mean_s: float
    interval_std_s: float
    #: MAC throughput counted as scheduled: rate × slot of every slot that served the user, per
    #: second of the cell's activity; and the slot fill, delivered over scheduled bits of the
    #: error-free slots (null before the first).
    mac_scheduled_bps: float
    #: MAC throughput: payload bits that got through per second of the cell's activity.
    mac_throughput_bps: float
    mean_rate_bps: float
    #: Mean true SINR (of the linear mean) and mean feasible rate over the cell's active slots.
    mean_sinr_db: float
    slot_fill: float | None
    #: Slots that served the user, and the frames of those that failed.
    slots_served: int


class LinkSummary(TypedDict):
    """One link's counters, as its model kept them."""

    #: The queue discipline's drops, marks and sojourn times (a link with an `aqm`).
    aqm: NotRequired[AqmSummary | None]
    arq_retransmissions: int
    bytes_out: int
    #: Packets this link corrupted that a receiver's checksum then dropped.
    checksum_drops: int
    frame_errors: int
    frames_sent: int
    loss_drops: int
    model: str
    name: str
    #: Packets lost because the link was down (a timed change), queued, in flight or arriving.
    outage_drops: int
    packets_given_up: int
    packets_in: int
    packets_out: int
    queue_drops: int
    #: Radio time spent in each modulation (only the modulations used).
    time_in_modulation_s: dict[str, float]
    #: A multi-user cell's users, by index (user i is the i-th flow through the cell).
    users: NotRequired[list[CellUserSummary] | None]


class RewrittenObject(TypedDict):
    error: str


Rewritten: TypeAlias = int | RewrittenObject


class PcapSummary(TypedDict):
    errors: list[str]
    #: airlink's own TCP and DCCP rewritten as the real protocols: packets per capture.
    native_packets: NotRequired[dict[str, Rewritten] | None]
    records: int


class RtReport(TypedDict):
    """What [`apply`] obtained; `None` = granted, `Some(reason)` = refused."""

    mlockall: str | None
    sched_fifo: str | None
    timerslack: str | None


class Realtime(TypedDict):
    """SCHED_FIFO and timer slack of the datapath: whether all was granted, what was refused."""

    granted: bool
    refused: RtReport
    warnings: list[str]


class StackSummary(TypedDict):
    """airlink's own endpoints in emulation."""

    #: Every sized flow delivered all its bytes (unsized flows run to the stop time).
    completed: bool
    cpu_s: float
    datagrams_received: int
    datagrams_sent: int
    duration_s: float
    flows: NotRequired[list[FlowSummary]]
    #: Datagrams that did not decode (counted, dropped).
    malformed: int
    oversize_bytes: int
    #: Packets longer than in simulation (payload smaller than iperf's header), and by how much.
    oversized_packets: int
    #: SCHED_FIFO and timer slack of the stack thread: what was refused.
    realtime: RtReport
    #: Sends the kernel refused (a full socket or device queue): the packet is lost.
    send_errors: int
    timer_late_max_us: float
    #: Lateness of the stack's wake-ups against the endpoint timers they served, µs.
    timer_late_p50_us: float
    timer_late_p99_us: float
    #: Corrupted datagrams the kernels dropped before airlink's endpoints saw them.
    udp_checksum_drops: dict[str, int]


class EmulationSummary(TypedDict):
    """An emulation's summary: per-link counters with the simulator's fields, airlink's own flows
    as the simulator sums them up, then what only emulation has (the datapath's timing, drops
    outside the links, the kernels' counters)."""

    #: The commands run in the namespaces, server first.
    commands: list[Command]
    #: With commands: the client command exited with 0; with airlink's own flows: every flow
    #: completed (as in simulation); in gateway mode: always. In every mode only within the
    #: timeout and with nothing interrupting the run.
    completed: bool
    cpu: Cpu
    datapath: DatapathReport
    drops: Drops
    #: Wall time from the emulation's start to its stop, s.
    duration_s: float
    #: airlink's own flows (none with the kernel's applications).
    flows: NotRequired[list[FlowSummary] | None]
    #: What stopped the run early (`"SIGINT"`, `"signal 15"`, `"exit"`), or null.
    interrupted: str | None
    #: Commands running iperf3: its reports as flows, and what could not be read.
    iperf3: NotRequired[Iperf3Results | None]
    links: list[LinkSummary]
    mode: str
    pcap: PcapSummary
    realtime: Realtime
    scenario: str
    seed: int
    stack: NotRequired[StackSummary | None]
    #: Gateway mode: what ended forwarding (`"duration"`, `"SIGINT"`, `"signal 15"`).
    stopped_by: NotRequired[str | None]
    #: The timeout passed before the run ended by itself.
    timed_out: bool
    warnings: list[str]


class RunSummary(TypedDict):
    """A simulation's summary (`summary.json`): the run, then per flow and per link counters."""

    #: Every flow completed (see [`FlowSummary::completed`]).
    completed: bool
    events: int
    flows: list[FlowSummary]
    links: list[LinkSummary]
    scenario: str
    seed: int
    sim_time_s: float


class ScenarioKey(TypedDict):
    """One key of a scenario file."""

    #: What the key accepts, with units: "a duration with a unit, like \"200 ms\" ...".
    accepts: str
    #: The value a file that leaves the key out gets, as TOML; `None` when the documentation
    #: says (a default that depends on other keys) or the key is required.
    default: str | None
    #: The doc comment of the field.
    doc: str
    #: Dotted path, `N` standing for a flow's index: `flow.N.tcp.rwnd`.
    key: str


Method: TypeAlias = Literal["select-relative", "nanosleep-relative", "sleep-with-slack", "busy-wait", "absolute-sleep", "hybrid"]


class TimingModelRow(TypedDict):
    """One 1999 kernel timer modelled over a series (`timing_model`); `name` is the timer's."""

    abs_max_ms: float
    abs_mean_ms: float
    #: 99th percentile of the absolute error a_i, ms.
    abs_p99_ms: float
    abs_var_ms2: float
    actual_ns: list[int]
    #: CPU time the waiting thread used, in per cent of the series' wall time.
    cpu_pct: float
    #: Elapsed minus requested over the whole series, ms: what a link emulated this way
    #: would lose (positive) or gain.
    drift_ms: float
    jiffy_ns: int
    method: Method
    name: str
    rel_mean: float
    rel_var: float
    requests: int
    slack: bool


class TimingStats(TypedDict):
    """One way of waiting measured (`timing_measure`, `timing_measure_series`)."""

    abs_max_ms: float
    abs_mean_ms: float
    #: 99th percentile of the absolute error a_i, ms.
    abs_p99_ms: float
    abs_var_ms2: float
    #: Each request's actual duration, ns (`timing_measure_series` only).
    actual_ns: NotRequired[list[int] | None]
    #: CPU time the waiting thread used, in per cent of the series' wall time.
    cpu_pct: float
    #: Elapsed minus requested over the whole series, ms: what a link emulated this way
    #: would lose (positive) or gain.
    drift_ms: float
    method: Method
    name: str
    #: Whether the measuring thread ran under SCHED_FIFO (null: not asked for).
    realtime: bool | None
    rel_mean: float
    rel_var: float
    requests: int


class UdpgenRecvReport(TypedDict):
    """What the receiver counted."""

    #: Kernel arrival times (CLOCK_REALTIME s) of the first and last counted packet.
    first_arrival_s: float | None
    #: Lowest and highest sequence number seen.
    first_seq: int | None
    #: Sequence numbers skipped on arrival (a packet with seq > next expected).
    gaps: int
    #: IP bytes of those packets (payload + 28 each).
    ip_bytes: int
    last_arrival_s: float | None
    last_seq: int | None
    #: Sequence numbers between the lowest and the highest never received (clamped at 0).
    lost: int
    #: Packets too short or without the magic (counted, otherwise ignored).
    malformed: int
    #: Packets with airlink's magic and a sequence number.
    packets: int
    packets_per_s: float | None
    payload_bytes: int
    #: IP bit/s between the first and last arrival (bytes after the first packet).
    rate_bps: float | None
    #: Packets that arrived with seq below the next expected one (reordered or duplicated).
    reordered: int
    #: Why it stopped: "duration" or "idle".
    stopped_by: str


class UdpgenSendReport(TypedDict):
    """What the sender did."""

    #: Packets per message (UDP GSO); 1 = one message per packet.
    gso_segments: int
    ip_bytes: int
    #: Latest a paced packet was sent after its due instant, in microseconds.
    max_late_us: float
    #: IP bit/s over the run's nominal duration (what the schedule offered).
    offered_rate_bps: float
    packets: int
    #: Payload bytes and IP bytes (payload + 28 per packet) sent.
    payload_bytes: int
    payload_size: int
    requested_rate_bps: int
    #: Seconds from the first packet's due instant to the end of the last `sendmmsg`.
    seconds: float
    #: Packets the kernel refused (ENOBUFS, ECONNREFUSED from an ICMP error, ...), counted and skipped.
    send_errors: int
    sendmmsg_calls: int
