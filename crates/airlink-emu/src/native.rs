//! Captures of airlink's own transports as the real protocols.
//!
//! On the emulated link airlink's TCP and DCCP travel inside UDP ([`airlink_transport::codec`]). Their
//! compact headers are the real headers less exactly what UDP carries, so swapping the UDP
//! header and the compact header for the real TCP (20 bytes + options) or DCCP (16 bytes with
//! X = 1, then the acknowledgement subheader and options, laid out as RFC 4340 has them)
//! header keeps every packet's length. After a run the pcap files are rewritten that way, so
//! Wireshark, tshark and tcptrace analyse airlink's own TCP and DCCP as they would a kernel's.
//! Checksums are recomputed where the whole packet was captured, else left zero (the capture
//! is headers only, as with any truncated capture). UDP flows and other packets are unchanged.

use airlink_transport::codec::{dccp_has_code, dccp_type_of, Protocol};
use pcap_file::pcap::{PcapReader, PcapWriter};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

/// A flow's UDP ports on the emulated link and the protocol it carries.
#[derive(Copy, Clone, Debug)]
pub struct FlowPorts {
    pub server: u16,
    pub client: u16,
    pub protocol: Protocol,
}

/// Rewrites the pcap at `path` in place (through a temporary file, so a failure leaves the
/// original); returns how many packets became TCP or DCCP.
pub fn rewrite_pcap(path: &Path, flows: &[FlowPorts]) -> Result<u64, String> {
    let err = |e: &dyn std::fmt::Display| format!("rewriting {}: {e}", path.display());
    let mut reader = PcapReader::new(BufReader::new(File::open(path).map_err(|e| err(&e))?))
        .map_err(|e| err(&e))?;
    let tmp = path.with_extension("pcap.native");
    let out = BufWriter::new(File::create(&tmp).map_err(|e| err(&e))?);
    let mut writer = PcapWriter::with_header(out, reader.header()).map_err(|e| err(&e))?;
    let mut converted = 0;
    // Raw records: pcap-file's checked reader refuses truncated ones (orig_len > snaplen),
    // which are what a headers-only capture is made of.
    while let Some(packet) = reader.next_raw_packet() {
        let mut packet = packet.map_err(|e| err(&e))?;
        if let Some(data) = native_packet(&packet.data, packet.orig_len, flows) {
            converted += 1;
            packet.incl_len = data.len() as u32; // unchanged: the headers swap byte for byte
            packet.data = data.into();
        }
        writer.write_raw_packet(&packet).map_err(|e| err(&e))?;
    }
    drop(writer);
    std::fs::rename(&tmp, path).map_err(|e| err(&e))?;
    Ok(converted)
}

/// The packet as native TCP or DCCP, when it is one of the flows' datagrams (`data` may be
/// truncated; `orig_len` is its length on the link).
pub fn native_packet(data: &[u8], orig_len: u32, flows: &[FlowPorts]) -> Option<Vec<u8>> {
    if data.len() < 20 || data[0] >> 4 != 4 || data[9] != 17 {
        return None;
    }
    let ihl = (data[0] & 0x0f) as usize * 4;
    let udp = data.get(ihl..ihl + 8)?;
    let (sport, dport) = (
        u16::from_be_bytes([udp[0], udp[1]]),
        u16::from_be_bytes([udp[2], udp[3]]),
    );
    let flow = flows.iter().find(|f| {
        (sport, dport) == (f.server, f.client) || (sport, dport) == (f.client, f.server)
    })?;
    let inner = &data[ihl + 8..];
    let (proto, mut transport) = match flow.protocol {
        Protocol::Tcp => (6, tcp_header(inner, sport, dport)?),
        Protocol::Dccp => (33, dccp_header(inner, sport, dport)?),
        Protocol::Udp => return None,
    };
    let mut ip = data[..ihl].to_vec();
    ip[9] = proto;
    ip[10..12].copy_from_slice(&[0, 0]);
    let sum = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    if data.len() == orig_len as usize {
        // The whole packet was captured: a correct transport checksum over the pseudo-header.
        let len = (transport.len() as u16).to_be_bytes();
        let pseudo = [&ip[12..20], &[0, proto], &len[..]].concat();
        let at = if proto == 6 { 16 } else { 6 };
        let sum = checksum(&[&pseudo, &transport]);
        transport[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    }
    ip.extend_from_slice(&transport);
    Some(ip)
}

/// airlink's 12-byte TCP layout (seq, ack, option words | flags, 24-bit window) as a real
/// 20-byte header; options and payload follow unchanged.
fn tcp_header(inner: &[u8], sport: u16, dport: u16) -> Option<Vec<u8>> {
    let fixed = inner.get(..12)?;
    let opt_words = fixed[8] >> 4;
    let f = fixed[8];
    // FIN, SYN and RST sit where TCP has them; airlink's ACK bit (8) is TCP's 0x10.
    let flags = (f & 0x07) | if f & 8 != 0 { 0x10 } else { 0 };
    let window = u32::from_be_bytes([0, fixed[9], fixed[10], fixed[11]]).min(0xffff) as u16;
    let mut h = Vec::with_capacity(inner.len() + 8);
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&fixed[..8]);
    h.push((5 + opt_words) << 4);
    h.push(flags);
    h.extend_from_slice(&window.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    h.extend_from_slice(&inner[12..]);
    Some(h)
}

/// airlink's DCCP layout (CCVal | app | type, option words, 48-bit sequence number) as the
/// real 16-byte generic header; the acknowledgement subheader, codes, options and payload
/// are laid out as on a real wire already.
fn dccp_header(inner: &[u8], sport: u16, dport: u16) -> Option<Vec<u8>> {
    let fixed = inner.get(..8)?;
    let kind = fixed[0] & 0x07;
    let packet_type = dccp_type_of(kind).ok()?;
    let words = 4 + 2 * packet_type.has_ack() as u8 + dccp_has_code(packet_type) as u8 + fixed[1];
    let mut h = Vec::with_capacity(inner.len() + 8);
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.push(words);
    h.push(fixed[0] & 0xf0); // CCVal, CsCov 0 (the checksum covers the whole packet)
    h.extend_from_slice(&[0, 0]); // checksum
    h.push(kind << 1 | 1); // Res | Type | X = 1
    h.push(0);
    h.extend_from_slice(&fixed[2..8]);
    h.extend_from_slice(&inner[8..]);
    Some(h)
}

/// The Internet checksum (RFC 1071) of the concatenated parts (each part but the last of even
/// length, as the IP header and the pseudo-header are).
fn checksum(parts: &[&[u8]]) -> u16 {
    parts
        .iter()
        .fold(etherparse::checksum::Sum16BitWords::new(), |sum, p| {
            sum.add_slice(p)
        })
        .ones_complement()
        .to_be() // summed as native-endian words, as etherparse's own headers do
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlink_transport::codec::{encode, IP_UDP_HEADERS};
    use airlink_transport::dccp::{DccpPacket, PacketType};
    use airlink_transport::Pdu;
    use airlink_transport::{Flags, SackBlocks, Segment};
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    const FLOWS: &[FlowPorts] = &[
        FlowPorts {
            server: 47_000,
            client: 46_000,
            protocol: Protocol::Tcp,
        },
        FlowPorts {
            server: 47_001,
            client: 46_001,
            protocol: Protocol::Dccp,
        },
    ];

    /// The IPv4/UDP datagram the emulator carries for `pdu`.
    fn datagram(pdu: &Pdu, sport: u16, dport: u16) -> Vec<u8> {
        let mut payload = Vec::new();
        encode(pdu, &mut payload);
        let total = (payload.len() as u32 + IP_UDP_HEADERS) as u16;
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2,
        ];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&dport.to_be_bytes());
        p.extend_from_slice(&(total - 20).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&payload);
        p
    }

    #[test]
    fn tcp_datagrams_become_real_tcp_segments_of_the_same_length() {
        let seg = Segment {
            seq: 1_000_001,
            ack: 1,
            len: 1448,
            flags: Flags::ACK,
            wnd: 65_535,
            timestamps: Some((11, 7)),
            ..Default::default()
        };
        let udp = datagram(&Pdu::Tcp(seg), 47_000, 46_000);
        let tcp = native_packet(&udp, udp.len() as u32, FLOWS).expect("a flow's packet");
        assert_eq!(tcp.len(), udp.len());
        assert_eq!(tcp.len() as u32, seg.wire_len());
        let sliced = SlicedPacket::from_ip(&tcp).expect("parses");
        let Some(TransportSlice::Tcp(t)) = sliced.transport else {
            panic!("not TCP")
        };
        assert_eq!((t.source_port(), t.destination_port()), (47_000, 46_000));
        assert_eq!(
            (
                t.sequence_number(),
                t.acknowledgment_number(),
                t.window_size()
            ),
            (1_000_001, 1, 65_535)
        );
        assert!(t.ack() && !t.syn() && !t.fin());
        assert_eq!(t.payload().len(), 1448);
        let Some(NetSlice::Ipv4(ip)) = sliced.net else {
            panic!()
        };
        let h = ip.header().to_header();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        let t = t.to_header();
        assert_eq!(
            t.checksum,
            t.calc_checksum_ipv4(&h, &vec![0u8; 1448]).unwrap()
        );
        assert!(t
            .options
            .elements_iter()
            .any(|o| matches!(o, Ok(etherparse::TcpOptionElement::Timestamp(11, 7)))));
    }

    #[test]
    fn sack_options_and_syn_flags_carry_over() {
        let syn = Segment {
            flags: Flags::SYN,
            mss_option: Some(1460),
            sack_permitted: true,
            ..Default::default()
        };
        let udp = datagram(&Pdu::Tcp(syn), 47_000, 46_000);
        let tcp = native_packet(&udp, udp.len() as u32, FLOWS).unwrap();
        let Some(TransportSlice::Tcp(t)) = SlicedPacket::from_ip(&tcp).unwrap().transport else {
            panic!()
        };
        assert!(t.syn() && !t.ack());
        let ack = Segment {
            ack: 5001,
            len: 100,
            flags: Flags::ACK,
            sack: SackBlocks::from_slice(&[(7897, 9345)]),
            ..Default::default()
        };
        let udp = datagram(&Pdu::Tcp(ack), 46_000, 47_000);
        let tcp = native_packet(&udp[..60], udp.len() as u32, FLOWS).unwrap(); // truncated capture
        let (t, _) = etherparse::TcpHeader::from_slice(&tcp[20..]).expect("a whole TCP header");
        assert_eq!((t.checksum, t.acknowledgment_number), (0, 5001));
        assert!(t.options.elements_iter().any(|o| matches!(
            o,
            Ok(etherparse::TcpOptionElement::SelectiveAcknowledgement(
                (7897, 9345),
                _
            ))
        )));
    }

    #[test]
    fn dccp_datagrams_become_real_dccp_packets() {
        let mut p = DccpPacket::new(PacketType::DataAck, 77);
        p.ack = Some(40);
        p.ccval = 5;
        p.payload = 1000;
        p.ack_vector = Some(vec![0x03]);
        let udp = datagram(&Pdu::Dccp(Box::new(p.clone())), 47_001, 46_001);
        let d = native_packet(&udp, udp.len() as u32, FLOWS).unwrap();
        assert_eq!(d.len() as u32, p.wire_len());
        assert_eq!(d[9], 33);
        let h = &d[20..];
        assert_eq!(h[4] as u32 * 4, p.header_len()); // data offset
        assert_eq!((h[5] >> 4, h[8] >> 1 & 0x0f, h[8] & 1), (5, 4, 1)); // CCVal, DataAck, X
        assert_eq!(&h[10..16], &[0, 0, 0, 0, 0, 77]);
        assert_eq!(&h[16..24], &[0, 0, 0, 0, 0, 0, 0, 40]);
        assert_eq!(&h[24..27], &[39, 3, 0x03]); // the Ack Vector option
        let len = ((d.len() - 20) as u16).to_be_bytes();
        assert_eq!(checksum(&[&d[12..20], &[0, 33], &len, h]), 0); // a valid checksum sums to 0
    }

    #[test]
    fn other_packets_stay_as_they_are() {
        let udp = datagram(&Pdu::Tcp(Segment::default()), 5000, 6000);
        assert!(native_packet(&udp, udp.len() as u32, FLOWS).is_none());
        assert!(native_packet(&[0x45, 0, 0], 3, FLOWS).is_none());
        let cut = datagram(&Pdu::Tcp(Segment::default()), 47_000, 46_000);
        assert!(native_packet(&cut[..30], cut.len() as u32, FLOWS).is_none()); // no whole header
    }
}
