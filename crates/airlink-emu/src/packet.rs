//! The emulator's packet: the real bytes of an IP packet read from a port.

use crate::port::LinkHeader;
use airlink_link::{Direction, Packet};
use airlink_net::Routed;

/// An IP packet crossing the emulated link. Bit errors flip the real bits.
#[derive(Clone, Debug, PartialEq)]
pub struct EmuPacket {
    pub data: Vec<u8>,
    /// A hash of its 5-tuple when read, then (by the datapath) the index of the scenario flow
    /// whose path it takes, as the simulator numbers flows: links that tell flows apart (a
    /// cell's users) and the drop log see the same ids in both modes.
    pub flow: u32,
    /// TCP or UDP source and destination ports (0 for other protocols).
    pub ports: (u16, u16),
    /// Which path the datapath sends it along (a scenario flow's, or the shared one), and the
    /// index of the next hop on it.
    pub route: u16,
    pub hop: u8,
    /// Its direction of travel (up: from the client to the server).
    pub dir: Direction,
    /// What the port it came from needs to send it on as it came (its Ethernet header in
    /// gateway mode); carried unread.
    pub link: LinkHeader,
}

/// Why a packet read from a port was not forwarded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Not IPv4 or IPv6 (first nibble), or shorter than an IP header.
    NotIp,
    /// An IP header whose lengths do not add up.
    BadHeader,
}

impl EmuPacket {
    /// Checks that `data` is an IP packet and derives its flow id: a hash (FNV-1a, stable
    /// across versions) of the 5-tuple, or of the addresses and protocol for other
    /// protocols. Malformed packets are refused (counted by the caller, never a panic).
    pub fn parse(data: Vec<u8>) -> Result<EmuPacket, Malformed> {
        let (flow, ports) = flow_of(&data)?;
        Ok(EmuPacket {
            data,
            flow,
            ports,
            route: 0,
            hop: 0,
            dir: Direction::Down,
            link: LinkHeader::default(),
        })
    }
}

fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for p in parts {
        for &b in *p {
            h ^= b as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

fn flow_of(data: &[u8]) -> Result<(u32, (u16, u16)), Malformed> {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    match data.first().map(|b| b >> 4) {
        Some(4) | Some(6) => {}
        _ => return Err(Malformed::NotIp),
    }
    let sliced = SlicedPacket::from_ip(data).map_err(|_| Malformed::BadHeader)?;
    let (src, dst, proto): (Vec<u8>, Vec<u8>, u8) = match &sliced.net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header();
            (
                h.source().to_vec(),
                h.destination().to_vec(),
                h.protocol().0,
            )
        }
        Some(NetSlice::Ipv6(v6)) => {
            let h = v6.header();
            (
                h.source().to_vec(),
                h.destination().to_vec(),
                h.next_header().0,
            )
        }
        _ => return Err(Malformed::BadHeader),
    };
    let ports = match &sliced.transport {
        Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port()),
        Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port()),
        _ => (0, 0),
    };
    Ok((
        fnv1a(&[&src, &dst, &[proto], &pack(ports.0, ports.1)]),
        ports,
    ))
}

fn pack(a: u16, b: u16) -> [u8; 4] {
    let (a, b) = (a.to_be_bytes(), b.to_be_bytes());
    [a[0], a[1], b[0], b[1]]
}

impl Packet for EmuPacket {
    fn wire_len(&self) -> u32 {
        self.data.len() as u32
    }
    fn flip_bit(&mut self, bit: u64) {
        if let Some(b) = self.data.get_mut((bit / 8) as usize) {
            *b ^= 0x80 >> (bit % 8);
        }
    }
    fn flow(&self) -> u32 {
        self.flow
    }
    fn duplicate(&self) -> Option<Self> {
        Some(self.clone())
    }
    fn direction(&self) -> Option<Direction> {
        Some(self.dir)
    }
    /// The scenario flow, its ports and direction: the 5-tuple, as the datapath knows it.
    fn flow_hash(&self) -> u32 {
        fnv1a(&[
            &self.flow.to_be_bytes(),
            &pack(self.ports.0, self.ports.1),
            &[(self.dir == Direction::Up) as u8],
        ])
    }
    /// The ECN field of the real IP header (IPv4 TOS or IPv6 traffic class, low two bits).
    fn ecn(&self) -> airlink_link::Ecn {
        let bits = match (self.data.first().map(|b| b >> 4), self.data.get(1)) {
            (Some(4), Some(&tos)) => tos,
            (Some(6), Some(&b1)) => b1 >> 4,
            _ => 0,
        };
        airlink_link::Ecn::from_bits(bits)
    }
    /// Sets CE in the real IP header, with the IPv4 header checksum fixed, so the receiving
    /// kernel's ECN sees the mark (RFC 3168 §5).
    fn set_ce(&mut self) {
        match self.data.first().map(|b| b >> 4) {
            Some(4) => {
                let Ok(h) = etherparse::Ipv4HeaderSlice::from_slice(&self.data) else {
                    return;
                };
                let mut header = h.to_header();
                header.ecn = etherparse::IpEcn::CongestionExperienced;
                let sum = header.calc_header_checksum();
                self.data[1] |= 0b11;
                self.data[10..12].copy_from_slice(&sum.to_be_bytes());
            }
            Some(6) if self.data.len() >= 40 => self.data[1] |= 0x30,
            _ => {}
        }
    }
}

impl Routed for EmuPacket {
    fn route(&self) -> usize {
        self.route as usize
    }
    fn dir(&self) -> Direction {
        self.dir
    }
    fn hop(&self) -> u8 {
        self.hop
    }
    fn set_hop(&mut self, hop: u8) {
        self.hop = hop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(src_port: u16, payload: &[u8]) -> Vec<u8> {
        let b =
            etherparse::PacketBuilder::ipv4([10, 77, 0, 1], [10, 77, 0, 2], 64).udp(src_port, 5000);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn flows_are_the_five_tuple() {
        let a = EmuPacket::parse(udp(1000, b"x")).unwrap();
        let b = EmuPacket::parse(udp(1000, b"yyyy")).unwrap();
        let c = EmuPacket::parse(udp(1001, b"x")).unwrap();
        assert_eq!(a.flow(), b.flow());
        assert_ne!(a.flow(), c.flow());
        assert_eq!(a.wire_len(), 20 + 8 + 1);
    }

    #[test]
    fn junk_is_refused_not_a_panic() {
        assert_eq!(EmuPacket::parse(vec![]), Err(Malformed::NotIp));
        assert_eq!(EmuPacket::parse(vec![0xff; 40]), Err(Malformed::NotIp));
        assert_eq!(
            EmuPacket::parse(vec![0x45, 0, 0]),
            Err(Malformed::BadHeader)
        );
        let mut p = udp(1, b"abc");
        p[0] = 0x4f; // IHL 60 bytes in a 31-byte packet
        assert_eq!(EmuPacket::parse(p), Err(Malformed::BadHeader));
        // Every prefix of a valid packet and many random byte strings: no panic.
        let good = udp(7, &[1; 64]);
        for n in 0..good.len() {
            let _ = EmuPacket::parse(good[..n].to_vec());
        }
        let mut rng = airlink_engine::RngStream::derive(1, "junk");
        for _ in 0..5000 {
            let n = rng.below(80) as usize;
            let mut v: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
            if n > 0 && rng.bernoulli(0.5) {
                v[0] = 0x45;
            }
            let _ = EmuPacket::parse(v);
        }
    }

    /// A queue's CE mark lands in the real header, and the IPv4 checksum still holds.
    #[test]
    fn a_ce_mark_sets_the_header_bits_and_keeps_the_checksum_valid() {
        use airlink_link::Ecn;
        let mut data = udp(1000, b"payload");
        // ECT(0), with the checksum of the header that says so.
        let mut h = etherparse::Ipv4HeaderSlice::from_slice(&data)
            .unwrap()
            .to_header();
        h.ecn = etherparse::IpEcn::Ect0;
        data[1] = (data[1] & !3) | 0b10;
        data[10..12].copy_from_slice(&h.calc_header_checksum().to_be_bytes());
        let mut p = EmuPacket::parse(data).unwrap();
        assert_eq!(p.ecn(), Ecn::Ect0);
        p.set_ce();
        assert_eq!(p.ecn(), Ecn::Ce);
        let h = etherparse::Ipv4HeaderSlice::from_slice(&p.data).unwrap();
        assert_eq!(h.header_checksum(), h.to_header().calc_header_checksum());
        assert_eq!(h.ecn(), etherparse::IpEcn::CongestionExperienced);
        // A packet of a transport that is not ECN-capable says so.
        assert_eq!(EmuPacket::parse(udp(1, b"x")).unwrap().ecn(), Ecn::NotEct);
    }

    #[test]
    fn bit_errors_flip_the_real_bits() {
        let mut p = EmuPacket::parse(udp(1, b"\x00")).unwrap();
        p.flip_bit(28 * 8); // first payload byte, most significant bit
        assert_eq!(p.data[28], 0x80);
        p.flip_bit(10_000_000); // outside: ignored
    }
}
