//! The transports' wire format: what a packet carries ([`Pdu`]) and how airlink's own
//! transports travel as UDP datagrams in emulation ([`encode`], [`decode`]).
//!
//! Each simulated header ([`Pdu`]) is written in its protocol's own layout, less the fields the
//! UDP header already carries (ports, checksum, length), and padded to the simulated payload,
//! so an emulated IP packet has exactly the simulated size (`Pdu::wire_len`): the links see the
//! same bytes in both modes. Only a UDP or DCCP data packet whose payload is smaller than the
//! 16-byte application header it carries comes out larger ([`encode`] says by how much).
//!
//! - **TCP** (12 bytes + options, as the 20-byte TCP header less ports, checksum and urgent
//!   pointer): sequence and acknowledgment numbers (low 32 bits), one byte with the option
//!   length in 4-byte words (high nibble) and the flags FIN 1, SYN 2, RST 4, ACK 8, a 24-bit
//!   window; then the options in Linux's layout (MSS; SACK-permitted and timestamps sharing
//!   their padding; SACK blocks with 32-bit edges). The receiver restores 64-bit numbers from
//!   the last ones it decoded ([`TcpUnwrap`]), as a TCP stack would from its state.
//! - **DCCP** (RFC 4340 §5.1 less ports and checksum): CCVal and type (with an
//!   "application header present" bit), data offset in 4-byte words, 48-bit sequence number,
//!   the acknowledgement subheader (2 reserved bytes, 48-bit number), 4 bytes of service or
//!   reset code, then options: Ack Vector (39), NDP Count (37), Change L of Ack Ratio (32/5),
//!   Change L of the CCID (32/1), and CCID-3 feedback as Elapsed Time (43, 10 µs units), Loss
//!   Event Rate (192, 1/p) and Receive Rate (194, bytes/s) — quantised as on a real wire.
//!   A data packet's payload starts with iperf's header: datagram id and send time (8 + 8).
//! - **UDP**: iperf's header (id, send time in ns since the emulation's origin), zeros after.

use crate::dccp::{AppHeader, DccpPacket, PacketType, TfrcFeedback};
use crate::ecn::Codepoint;
use crate::segment::{Flags, SackBlocks, Segment};
use crate::udp::UdpDatagram;
use airlink_engine::{Duration, Instant};

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

    /// The ECN field of the IP header (RFC 3168 §5): a TCP segment's own; UDP and DCCP
    /// packets are not ECN-capable.
    pub fn ecn(&self) -> Codepoint {
        match self {
            Pdu::Tcp(s) => s.ip_ecn,
            Pdu::Udp(_) | Pdu::Dccp(_) => Codepoint::NotEct,
        }
    }

    /// Marks the packet Congestion Experienced (a queue discipline does, on ECN-capable ones).
    pub fn set_ce(&mut self) {
        if let Pdu::Tcp(s) = self {
            s.ip_ecn = Codepoint::Ce;
        }
    }
}

/// IP (20) and UDP (8) headers in front of every encoded header.
pub const IP_UDP_HEADERS: u32 = 28;
/// iperf's header at the start of a UDP or DCCP payload: id and send time.
const APP_HEADER_LEN: usize = 16;

/// Why a datagram could not be decoded (it is counted and dropped, never a panic).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its headers say.
    Truncated,
    /// An unknown packet type or an option that does not parse.
    Malformed,
}

/// Which protocol a flow speaks (one per flow, so datagrams carry no protocol tag).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
    Dccp,
}

/// Writes the UDP payload for `pdu` into `out` (cleared first). Returns how many bytes the
/// packet exceeds its simulated size by (0 nearly always).
pub fn encode(pdu: &Pdu, out: &mut Vec<u8>) -> u32 {
    out.clear();
    match pdu {
        Pdu::Tcp(s) => encode_tcp(s, out),
        Pdu::Udp(d) => {
            put_app(out, d.id, d.sent_at);
        }
        Pdu::Dccp(p) => encode_dccp(p, out),
    }
    let target = pdu.wire_len().saturating_sub(IP_UDP_HEADERS) as usize;
    let extra = out.len().saturating_sub(target) as u32;
    out.resize(out.len().max(target), 0);
    extra
}

/// Decodes a UDP payload of a flow speaking `protocol`.
pub fn decode(protocol: Protocol, data: &[u8], tcp: &mut TcpUnwrap) -> Result<Pdu, DecodeError> {
    match protocol {
        Protocol::Tcp => decode_tcp(data, tcp).map(Pdu::Tcp),
        Protocol::Dccp => decode_dccp(data).map(|p| Pdu::Dccp(Box::new(p))),
        Protocol::Udp => {
            let (id, sent_at) = get_app(data)?;
            let payload = (data.len() as u32).max(APP_HEADER_LEN as u32);
            Ok(Pdu::Udp(UdpDatagram {
                id,
                sent_at,
                payload,
            }))
        }
    }
}

fn put_app(out: &mut Vec<u8>, id: u64, sent_at: Instant) {
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&sent_at.as_nanos().to_be_bytes());
}

fn get_app(data: &[u8]) -> Result<(u64, Instant), DecodeError> {
    let id = be(data, 0, 8)?;
    let sent = be(data, 8, 8)?;
    Ok((id, Instant::from_nanos(sent)))
}

/// Big-endian unsigned integer of `n` bytes at `at`.
fn be(data: &[u8], at: usize, n: usize) -> Result<u64, DecodeError> {
    let bytes = data.get(at..at + n).ok_or(DecodeError::Truncated)?;
    Ok(bytes.iter().fold(0u64, |v, b| (v << 8) | *b as u64))
}

fn put_be(out: &mut Vec<u8>, v: u64, n: usize) {
    out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
}

// ---------------------------------------------------------------------------------- TCP

const TCP_FIXED: usize = 12;
const MAX_WINDOW: u32 = (1 << 24) - 1;

/// The receiver's state for restoring 64-bit sequence numbers from their low 32 bits: the
/// last sequence and acknowledgment numbers decoded in this direction.
#[derive(Clone, Debug, Default)]
pub struct TcpUnwrap {
    seq: u64,
    ack: u64,
}

/// The 64-bit number with these low 32 bits closest to `near`.
fn unwrap32(low: u32, near: u64) -> u64 {
    let base = near & !0xffff_ffff;
    [base.wrapping_sub(1 << 32), base, base.wrapping_add(1 << 32)]
        .into_iter()
        .map(|b| b | low as u64)
        .min_by_key(|c| c.abs_diff(near))
        .expect("three candidates")
}

fn encode_tcp(s: &Segment, out: &mut Vec<u8>) {
    let mut opts = Vec::with_capacity(40);
    if let Some(mss) = s.mss_option {
        opts.extend_from_slice(&[2, 4]);
        put_be(&mut opts, mss as u64, 2);
    }
    match (s.timestamps, s.sack_permitted) {
        (Some((val, ecr)), sackok) => {
            opts.extend_from_slice(if sackok { &[4, 2] } else { &[1, 1] });
            opts.extend_from_slice(&[8, 10]);
            put_be(&mut opts, val as u64, 4);
            put_be(&mut opts, ecr as u64, 4);
        }
        (None, true) => opts.extend_from_slice(&[1, 1, 4, 2]),
        (None, false) => {}
    }
    if !s.sack.is_empty() {
        opts.extend_from_slice(&[1, 1, 5, 2 + 8 * s.sack.len() as u8]);
        for (a, b) in s.sack.iter() {
            put_be(&mut opts, a & 0xffff_ffff, 4);
            put_be(&mut opts, b & 0xffff_ffff, 4);
        }
    }
    let flags = s.flags.fin as u8
        | (s.flags.syn as u8) << 1
        | (s.flags.rst as u8) << 2
        | (s.flags.ack as u8) << 3;
    put_be(out, s.seq & 0xffff_ffff, 4);
    put_be(out, s.ack & 0xffff_ffff, 4);
    out.push(((opts.len() / 4) as u8) << 4 | flags);
    put_be(out, s.wnd.min(MAX_WINDOW) as u64, 3);
    out.extend_from_slice(&opts);
}

fn decode_tcp(data: &[u8], st: &mut TcpUnwrap) -> Result<Segment, DecodeError> {
    if data.len() < TCP_FIXED {
        return Err(DecodeError::Truncated);
    }
    let b = data[8];
    let opt_len = (b >> 4) as usize * 4;
    let opts = data
        .get(TCP_FIXED..TCP_FIXED + opt_len)
        .ok_or(DecodeError::Truncated)?;
    let flags = Flags {
        fin: b & 1 != 0,
        syn: b & 2 != 0,
        rst: b & 4 != 0,
        ack: b & 8 != 0,
    };
    let seq = unwrap32(be(data, 0, 4)? as u32, st.seq);
    let ack = unwrap32(be(data, 4, 4)? as u32, st.ack);
    let mut s = Segment {
        seq,
        ack,
        len: (data.len() - TCP_FIXED - opt_len) as u32,
        flags,
        wnd: be(data, 9, 3)? as u32,
        ..Segment::default()
    };
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1).ok_or(DecodeError::Malformed)? as usize;
                let body = opts
                    .get(i + 2..i + len.max(2))
                    .ok_or(DecodeError::Malformed)?;
                match (kind, len) {
                    (2, 4) => s.mss_option = Some(be(body, 0, 2)? as u16),
                    (4, 2) => s.sack_permitted = true,
                    (8, 10) => {
                        s.timestamps = Some((be(body, 0, 4)? as u32, be(body, 4, 4)? as u32))
                    }
                    (5, l) if l >= 10 && (l - 2) % 8 == 0 => {
                        let mut blocks = SackBlocks::new();
                        for e in body.chunks_exact(8) {
                            let start = unwrap32(be(e, 0, 4)? as u32, ack);
                            let end = unwrap32(be(e, 4, 4)? as u32, start);
                            blocks.push(start, end);
                        }
                        s.sack = blocks;
                    }
                    _ => return Err(DecodeError::Malformed),
                }
                i += len.max(2);
            }
        }
    }
    st.seq = seq;
    if flags.ack {
        st.ack = ack;
    }
    Ok(s)
}

// --------------------------------------------------------------------------------- DCCP

const APP_PRESENT: u8 = 0x08;

fn type_code(k: PacketType) -> u8 {
    match k {
        PacketType::Request => 0,
        PacketType::Response => 1,
        PacketType::Data => 2,
        PacketType::Ack => 3,
        PacketType::DataAck => 4,
        PacketType::CloseReq => 5,
        PacketType::Close => 6,
        PacketType::Reset => 7,
    }
}

/// The DCCP packet type of a type code (RFC 4340 §5.1), as the compact header carries it.
pub fn dccp_type_of(code: u8) -> Result<PacketType, DecodeError> {
    Ok(match code {
        0 => PacketType::Request,
        1 => PacketType::Response,
        2 => PacketType::Data,
        3 => PacketType::Ack,
        4 => PacketType::DataAck,
        5 => PacketType::CloseReq,
        6 => PacketType::Close,
        7 => PacketType::Reset,
        _ => return Err(DecodeError::Malformed),
    })
}

/// Whether the type carries 4 bytes of service code (Request, Response) or reset code.
pub fn dccp_has_code(k: PacketType) -> bool {
    matches!(
        k,
        PacketType::Request | PacketType::Response | PacketType::Reset
    )
}

/// Elapsed Time and the CCID-3 options count in units as on the wire.
const ELAPSED_UNIT_NS: u64 = 10_000;

fn encode_dccp(p: &DccpPacket, out: &mut Vec<u8>) {
    let mut opts = Vec::new();
    if let Some(v) = &p.ack_vector {
        // An option holds at most 253 bytes; longer vectors are cut (the model keeps them short).
        let v = &v[..v.len().min(253)];
        opts.extend_from_slice(&[39, 2 + v.len() as u8]);
        opts.extend_from_slice(v);
    }
    if p.ndp_count > 0 {
        let n = match p.ndp_count {
            0..=0xff => 1,
            0x100..=0xffff => 2,
            _ => 3,
        };
        opts.extend_from_slice(&[37, 2 + n as u8]);
        put_be(&mut opts, p.ndp_count.min(0xff_ffff) as u64, n);
    }
    if let Some(r) = p.ack_ratio {
        opts.extend_from_slice(&[32, 5, 5]);
        put_be(&mut opts, r as u64, 2);
    }
    if let Some(f) = &p.feedback {
        opts.extend_from_slice(&[43, 6]);
        put_be(
            &mut opts,
            (f.elapsed.as_nanos() / ELAPSED_UNIT_NS).min(u32::MAX as u64),
            4,
        );
        let inv_p = if f.p > 0.0 {
            (1.0 / f.p).round().clamp(1.0, (u32::MAX - 1) as f64) as u64
        } else {
            u32::MAX as u64
        };
        opts.extend_from_slice(&[192, 6]);
        put_be(&mut opts, inv_p, 4);
        opts.extend_from_slice(&[194, 6]);
        put_be(
            &mut opts,
            f.x_recv.round().clamp(0.0, u32::MAX as f64) as u64,
            4,
        );
    }
    if let Some(c) = p.ccid {
        opts.extend_from_slice(&[32, 4, 1, c]);
    }
    opts.resize(opts.len().div_ceil(4) * 4, 0);
    let app = if p.app.is_some() { APP_PRESENT } else { 0 };
    out.push((p.ccval & 0x0f) << 4 | app | type_code(p.kind));
    out.push((opts.len() / 4).min(255) as u8);
    put_be(out, p.seq & 0xffff_ffff_ffff, 6);
    if p.kind.has_ack() {
        out.extend_from_slice(&[0, 0]);
        put_be(out, p.ack.unwrap_or(0) & 0xffff_ffff_ffff, 6);
    }
    if dccp_has_code(p.kind) {
        out.extend_from_slice(&[0; 4]);
    }
    out.extend_from_slice(&opts);
    if let Some(h) = p.app {
        put_app(out, h.id, h.sent_at);
    }
}

fn decode_dccp(data: &[u8]) -> Result<DccpPacket, DecodeError> {
    let b0 = *data.first().ok_or(DecodeError::Truncated)?;
    let kind = dccp_type_of(b0 & 0x07)?;
    let opt_len = *data.get(1).ok_or(DecodeError::Truncated)? as usize * 4;
    let mut p = DccpPacket::new(kind, be(data, 2, 6)?);
    p.ccval = b0 >> 4;
    let mut at = 8;
    if kind.has_ack() {
        p.ack = Some(be(data, at + 2, 6)?);
        at += 8;
    }
    if dccp_has_code(kind) {
        at += 4;
    }
    let opts = data.get(at..at + opt_len).ok_or(DecodeError::Truncated)?;
    at += opt_len;
    let mut feedback = (None, None, None);
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        if kind < 32 {
            i += 1; // Padding and the other single-byte options
            continue;
        }
        let len = *opts.get(i + 1).ok_or(DecodeError::Malformed)? as usize;
        let body = opts
            .get(i + 2..i + len.max(2))
            .ok_or(DecodeError::Malformed)?;
        match (kind, len) {
            (39, _) => p.ack_vector = Some(body.to_vec()),
            (37, 3..=5) => p.ndp_count = be(body, 0, len - 2)? as u32,
            (32, 5) if body[0] == 5 => p.ack_ratio = Some(be(body, 1, 2)? as u16),
            (32, 4) if body[0] == 1 => p.ccid = Some(body[1]),
            (43, 6) => feedback.0 = Some(Duration::from_nanos(be(body, 0, 4)? * ELAPSED_UNIT_NS)),
            (192, 6) => feedback.1 = Some(be(body, 0, 4)?),
            (194, 6) => feedback.2 = Some(be(body, 0, 4)? as f64),
            _ => return Err(DecodeError::Malformed),
        }
        i += len.max(2);
    }
    if let (Some(elapsed), Some(inv_p), Some(x_recv)) = feedback {
        let p_loss = if inv_p >= u32::MAX as u64 || inv_p == 0 {
            0.0
        } else {
            1.0 / inv_p as f64
        };
        p.feedback = Some(TfrcFeedback {
            x_recv,
            p: p_loss,
            elapsed,
        });
    }
    let rest = &data[at..];
    if b0 & APP_PRESENT != 0 {
        let (id, sent_at) = get_app(rest)?;
        p.app = Some(AppHeader { id, sent_at });
    }
    if kind.carries_data() {
        p.payload = rest.len() as u32;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(pdu: &Pdu, protocol: Protocol, st: &mut TcpUnwrap) -> Pdu {
        let mut buf = Vec::new();
        let extra = encode(pdu, &mut buf);
        assert_eq!(buf.len() as u32 + IP_UDP_HEADERS, pdu.wire_len() + extra);
        decode(protocol, &buf, st).expect("decodes")
    }

    #[test]
    fn tcp_segments_keep_their_simulated_size_and_fields() {
        let syn = Segment {
            flags: Flags::SYN,
            mss_option: Some(1460),
            sack_permitted: true,
            timestamps: Some((7, 0)),
            ..Default::default()
        };
        let ack = Segment {
            seq: 1,
            ack: 90_001,
            flags: Flags::ACK,
            wnd: 3_000_000,
            sack: SackBlocks::from_slice(&[(100_001, 101_461), (95_001, 96_461)]),
            ..Default::default()
        };
        let data = Segment {
            seq: 4_294_967_000,
            ack: 1,
            len: 1460,
            flags: Flags::ACK,
            wnd: 65_535,
            ..Default::default()
        };
        let mut st = TcpUnwrap::default();
        for s in [syn, ack] {
            let Pdu::Tcp(back) = roundtrip(&Pdu::Tcp(s), Protocol::Tcp, &mut st) else {
                panic!()
            };
            assert_eq!(back, s);
            assert_eq!(encode(&Pdu::Tcp(s), &mut Vec::new()), 0);
        }
        // Sequence numbers past 2^32 come back whole from the receiver's state.
        let mut st = TcpUnwrap {
            seq: 4_294_000_000,
            ack: 1,
        };
        let later = Segment {
            seq: (1 << 32) + 5000,
            ..data
        };
        for s in [data, later] {
            let Pdu::Tcp(back) = roundtrip(&Pdu::Tcp(s), Protocol::Tcp, &mut st) else {
                panic!()
            };
            assert_eq!(back, s);
        }
    }

    #[test]
    fn dccp_packets_keep_their_size_and_quantise_feedback_as_the_wire_does() {
        let mut ack = DccpPacket::new(PacketType::Ack, 77);
        ack.ack = Some(1234);
        ack.ack_vector = Some(vec![0x05, 0xc0, 0x01]);
        ack.ndp_count = 300;
        ack.feedback = Some(TfrcFeedback {
            x_recv: 123_456.4,
            p: 0.0123,
            elapsed: Duration::from_nanos(1_234_567),
        });
        let Pdu::Dccp(back) = roundtrip(
            &Pdu::Dccp(Box::new(ack.clone())),
            Protocol::Dccp,
            &mut TcpUnwrap::default(),
        ) else {
            panic!()
        };
        let f = back.feedback.unwrap();
        assert_eq!(f.x_recv, 123_456.0);
        assert_eq!(f.p, 1.0 / 81.0);
        assert_eq!(f.elapsed, Duration::from_nanos(1_230_000));
        assert_eq!(
            (back.ack, back.ack_vector.clone(), back.ndp_count),
            (ack.ack, ack.ack_vector.clone(), 300)
        );

        let mut data = DccpPacket::new(PacketType::DataAck, 1 << 40);
        data.ack = Some(3);
        data.ccval = 9;
        data.payload = 1000;
        data.ack_ratio = Some(4);
        data.app = Some(AppHeader {
            id: 42,
            sent_at: Instant::from_nanos(987_654_321),
        });
        let Pdu::Dccp(back) = roundtrip(
            &Pdu::Dccp(Box::new(data.clone())),
            Protocol::Dccp,
            &mut TcpUnwrap::default(),
        ) else {
            panic!()
        };
        assert_eq!(*back, data);

        let mut req = DccpPacket::new(PacketType::Request, 0);
        req.ccid = Some(3);
        let Pdu::Dccp(back) = roundtrip(
            &Pdu::Dccp(Box::new(req.clone())),
            Protocol::Dccp,
            &mut TcpUnwrap::default(),
        ) else {
            panic!()
        };
        assert_eq!(*back, req);
    }

    #[test]
    fn udp_datagrams_carry_iperf_header_and_grow_only_when_too_small_for_it() {
        let d = UdpDatagram {
            id: 5,
            sent_at: Instant::from_nanos(1_000_000_007),
            payload: 72,
        };
        let Pdu::Udp(back) = roundtrip(&Pdu::Udp(d), Protocol::Udp, &mut TcpUnwrap::default())
        else {
            panic!()
        };
        assert_eq!(back, d);
        let tiny = UdpDatagram { payload: 10, ..d };
        assert_eq!(encode(&Pdu::Udp(tiny), &mut Vec::new()), 6);
    }

    #[test]
    fn unwrap_picks_the_nearest() {
        assert_eq!(unwrap32(5, 0), 5);
        assert_eq!(unwrap32(0xffff_fff0, 0x1_0000_0010), 0xffff_fff0);
        assert_eq!(unwrap32(0x10, 0xffff_fff0), 0x1_0000_0010);
    }

    /// Every cut of a valid datagram short of its headers is refused as truncated; no cut panics.
    #[test]
    fn truncated_datagrams_are_refused_as_truncated() {
        let seg = Segment {
            seq: 9,
            ack: 5,
            len: 100,
            flags: Flags::ACK,
            timestamps: Some((1, 2)),
            sack: SackBlocks::from_slice(&[(50, 60)]),
            ..Default::default()
        };
        let mut tcp = Vec::new();
        encode(&Pdu::Tcp(seg), &mut tcp);
        let headers = TCP_FIXED + 12 + 12; // timestamps (12), one SACK block padded (12)
        for n in 0..headers {
            let r = decode(Protocol::Tcp, &tcp[..n], &mut TcpUnwrap::default());
            assert_eq!(r.unwrap_err(), DecodeError::Truncated, "TCP cut at {n}");
        }
        // Past the headers a cut only shortens the payload.
        let Ok(Pdu::Tcp(s)) = decode(
            Protocol::Tcp,
            &tcp[..headers + 7],
            &mut TcpUnwrap::default(),
        ) else {
            panic!()
        };
        assert_eq!(s.len, 7);

        let mut p = DccpPacket::new(PacketType::DataAck, 1);
        p.ack = Some(1);
        p.payload = 100;
        p.ack_ratio = Some(2);
        p.app = Some(AppHeader {
            id: 1,
            sent_at: Instant::from_nanos(5),
        });
        let mut dccp = Vec::new();
        encode(&Pdu::Dccp(Box::new(p)), &mut dccp);
        let headers = 16 + 8 + APP_HEADER_LEN; // fixed and ack, Ack Ratio padded, app header
        for n in 0..headers {
            let r = decode(Protocol::Dccp, &dccp[..n], &mut TcpUnwrap::default());
            assert_eq!(r.unwrap_err(), DecodeError::Truncated, "DCCP cut at {n}");
        }
        for n in 0..APP_HEADER_LEN {
            let r = decode(Protocol::Udp, &vec![0; n], &mut TcpUnwrap::default());
            assert_eq!(r.unwrap_err(), DecodeError::Truncated, "UDP cut at {n}");
        }
    }

    /// Options that do not parse are refused as malformed, and the TCP state is left as it was.
    #[test]
    fn options_that_do_not_parse_are_malformed() {
        let mut st = TcpUnwrap { seq: 7, ack: 3 };
        // One option word: an unknown kind 99, then a SACK option whose length runs past the end.
        for opts in [[99, 4, 0, 0], [5, 10, 0, 0], [2, 0, 0, 0]] {
            let mut tcp = vec![0, 0, 0, 1, 0, 0, 0, 1, 1 << 4 | 8, 0, 0, 1];
            tcp.extend_from_slice(&opts);
            assert_eq!(
                decode(Protocol::Tcp, &tcp, &mut st).unwrap_err(),
                DecodeError::Malformed,
                "{opts:?}"
            );
            assert_eq!((st.seq, st.ack), (7, 3));
        }
        // DCCP: an Ack (type 3) with an unknown option 50, and one whose length runs past the end.
        for opts in [[50, 4, 0, 0], [39, 9, 0, 0]] {
            let mut dccp = vec![3, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
            dccp.extend_from_slice(&opts);
            assert_eq!(
                decode(Protocol::Dccp, &dccp, &mut TcpUnwrap::default()).unwrap_err(),
                DecodeError::Malformed,
                "{opts:?}"
            );
        }
    }

    proptest! {
        /// Any DCCP data packet a sender can make comes back as it was, at its size.
        #[test]
        fn dccp_data_roundtrip(seq in 0u64..1 << 48, ack in proptest::option::of(0u64..1 << 48),
                               ccval in 0u8..16, payload in 16u32..1400, ndp in 0u32..1 << 24,
                               ratio in proptest::option::of(any::<u16>()), id in any::<u64>(),
                               sent in any::<u64>()) {
            let mut p = DccpPacket::new(if ack.is_some() { PacketType::DataAck } else { PacketType::Data }, seq);
            p.ack = ack;
            p.ccval = ccval;
            p.payload = payload;
            p.ndp_count = ndp;
            p.ack_ratio = ratio;
            p.app = Some(AppHeader { id, sent_at: Instant::from_nanos(sent) });
            let Pdu::Dccp(back) = roundtrip(&Pdu::Dccp(Box::new(p.clone())), Protocol::Dccp, &mut TcpUnwrap::default()) else { panic!() };
            prop_assert_eq!(*back, p);
        }

        /// Any UDP datagram at least as large as iperf's header comes back as it was.
        #[test]
        fn udp_roundtrip(id in any::<u64>(), sent in any::<u64>(), payload in 16u32..1473) {
            let d = UdpDatagram { id, sent_at: Instant::from_nanos(sent), payload };
            let Pdu::Udp(back) = roundtrip(&Pdu::Udp(d), Protocol::Udp, &mut TcpUnwrap::default()) else { panic!() };
            prop_assert_eq!(back, d);
        }

        /// Garbage never panics the decoders.
        #[test]
        fn garbage_is_refused_or_decoded(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut st = TcpUnwrap::default();
            for p in [Protocol::Tcp, Protocol::Udp, Protocol::Dccp] {
                let _ = decode(p, &data, &mut st);
            }
        }

        /// Any data segment or ACK the model can make comes back as it was, at its size.
        #[test]
        fn tcp_roundtrip(seq in 0u64..1 << 34, ack in 0u64..1 << 34, len in 0u32..1461, wnd in 0u32..MAX_WINDOW,
                         ts in proptest::option::of((any::<u32>(), any::<u32>())), nsack in 0usize..4) {
            let blocks: Vec<(u64, u64)> = (0..nsack as u64).map(|i| (ack + 2000 * (i + 1), ack + 2000 * (i + 1) + 1460)).collect();
            let s = Segment { seq, ack, len, flags: Flags::ACK, wnd, timestamps: ts, sack: SackBlocks::from_slice(&blocks), ..Default::default() };
            let mut st = TcpUnwrap { seq: seq.saturating_sub(1 << 20), ack: ack.saturating_sub(1 << 20) };
            let Pdu::Tcp(back) = roundtrip(&Pdu::Tcp(s), Protocol::Tcp, &mut st) else { panic!() };
            prop_assert_eq!(back, s);
        }
    }
}
