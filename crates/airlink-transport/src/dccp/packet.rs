//! DCCP packets as the simulation carries them: header fields and options, payload as a count.
//!
//! Sequence numbers are absolute `u64` values below 2⁴⁸ (ISS = 0 on both sides, extended
//! 48-bit form, X = 1, as Linux uses); they never wrap in a run.

use super::ackvec;

/// RFC 4340 §5.1 packet types (Sync/SyncAck are not modelled).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    Request,
    Response,
    Data,
    Ack,
    DataAck,
    CloseReq,
    Close,
    Reset,
}

impl PacketType {
    /// Whether the type carries an acknowledgement subheader.
    pub fn has_ack(self) -> bool {
        !matches!(self, PacketType::Request | PacketType::Data)
    }
    /// Whether the type carries application data (RFC 4340 §7.7: the others are non-data).
    pub fn carries_data(self) -> bool {
        matches!(self, PacketType::Data | PacketType::DataAck)
    }
}

/// The iperf header inside a data packet's payload (id and write time), as for UDP.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AppHeader {
    pub id: u64,
    pub sent_at: airlink_engine::Instant,
}

/// CCID-3 receiver feedback (RFC 4342 §8.3): Receive Rate, Loss Event Rate and Elapsed Time
/// options on an Ack.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TfrcFeedback {
    /// Receive rate since the last feedback, bytes/s.
    pub x_recv: f64,
    /// Loss event rate p (0 = no loss event yet).
    pub p: f64,
    /// Time between receiving the packet named by the Ack Number and sending this feedback.
    pub elapsed: airlink_engine::Duration,
}

/// One DCCP packet's header fields and options.
#[derive(Clone, Debug, PartialEq)]
pub struct DccpPacket {
    pub kind: PacketType,
    pub seq: u64,
    /// Acknowledgement Number = GSR of the sender of this packet (types with `has_ack` only).
    pub ack: Option<u64>,
    /// CCID-3 window counter (4 bits, RFC 4342 §8.1); 0 otherwise.
    pub ccval: u8,
    /// Payload bytes (data packets).
    pub payload: u32,
    /// iperf header of a data packet.
    pub app: Option<AppHeader>,
    /// Ack Vector option bytes (RFC 4340 §11.4), walking back from `ack`.
    pub ack_vector: Option<Vec<u8>>,
    /// NDP Count option: non-data packets sent just before this one (RFC 4340 §7.7).
    pub ndp_count: u32,
    /// Change L(Ack Ratio) option (CCID-2 sender → receiver).
    pub ack_ratio: Option<u16>,
    /// CCID-3 feedback options.
    pub feedback: Option<TfrcFeedback>,
    /// Request/Response: the CCID this connection uses (feature negotiation's outcome).
    pub ccid: Option<u8>,
}

impl DccpPacket {
    /// IPv4 header without options.
    pub const IP_HEADER_LEN: u32 = 20;
    /// Generic header with X = 1.
    pub const GENERIC_HEADER_LEN: u32 = 16;
    /// Acknowledgement subheader with X = 1.
    pub const ACK_SUBHEADER_LEN: u32 = 8;
    /// The longest header a packet carrying data gets: a DataAck (16 + 8) with the options a
    /// sender attaches to data, NDP Count at its longest (2 + 3) and Change L of Ack Ratio (5),
    /// padded to 12.
    pub const MAX_DATA_HEADER_LEN: u32 = 36;

    /// The largest payload whose data packets fit in `mtu` bytes of IP packet (DCCP never
    /// fragments, RFC 4340 §14), or 0 if none does.
    pub fn max_data_payload(mtu: u32) -> u32 {
        mtu.saturating_sub(Self::IP_HEADER_LEN + Self::MAX_DATA_HEADER_LEN)
    }

    /// A bare packet of `kind` with sequence number `seq`.
    pub fn new(kind: PacketType, seq: u64) -> Self {
        DccpPacket {
            kind,
            seq,
            ack: None,
            ccval: 0,
            payload: 0,
            app: None,
            ack_vector: None,
            ndp_count: 0,
            ack_ratio: None,
            feedback: None,
            ccid: None,
        }
    }

    /// Option bytes before padding: Ack Vector 2 + n, NDP Count 2 + (1..3), Change L 4
    /// (type, length, feature, 1-byte value; Ack Ratio needs 2 → 5), feedback 3 × 6
    /// (Elapsed Time 4-byte form, Receive Rate, Loss Event Rate), CCID feature on
    /// Request/Response 4 (Change L / Confirm R of CCID).
    pub fn options_len(&self) -> u32 {
        let mut n = 0;
        if let Some(v) = &self.ack_vector {
            n += 2 + v.len() as u32;
        }
        if self.ndp_count > 0 {
            n += 2 + match self.ndp_count {
                0..=0xff => 1,
                0x100..=0xffff => 2,
                _ => 3,
            };
        }
        if self.ack_ratio.is_some() {
            n += 5;
        }
        if self.feedback.is_some() {
            n += 18;
        }
        if self.ccid.is_some() {
            n += 4;
        }
        n
    }

    /// DCCP header bytes: generic 16, ack subheader 8, Request/Response service code 4, Reset
    /// code and data 4, options padded to a multiple of 4.
    pub fn header_len(&self) -> u32 {
        let mut h = Self::GENERIC_HEADER_LEN;
        if self.kind.has_ack() {
            h += Self::ACK_SUBHEADER_LEN;
        }
        if matches!(
            self.kind,
            PacketType::Request | PacketType::Response | PacketType::Reset
        ) {
            h += 4;
        }
        h + self.options_len().div_ceil(4) * 4
    }

    /// IP packet size: 20 B IP + DCCP header + payload.
    pub fn wire_len(&self) -> u32 {
        Self::IP_HEADER_LEN + self.header_len() + self.payload
    }

    /// The packet's Ack Vector, decoded into runs, or `None` if absent or malformed.
    pub fn decoded_ack_vector(&self) -> Option<Vec<ackvec::Run>> {
        ackvec::decode(self.ack?, self.ack_vector.as_deref()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths() {
        let mut d = DccpPacket::new(PacketType::Data, 5);
        d.payload = 1424;
        assert_eq!(d.wire_len(), 20 + 16 + 1424);
        d.kind = PacketType::DataAck;
        d.ack = Some(3);
        assert_eq!(d.header_len(), 24);
        let mut a = DccpPacket::new(PacketType::Ack, 9);
        a.ack = Some(8);
        a.ack_vector = Some(vec![0; 3]); // 5 option bytes → 8
        assert_eq!(a.header_len(), 24 + 8);
        a.ack_vector = None;
        a.feedback = Some(TfrcFeedback {
            x_recv: 1.0,
            p: 0.0,
            elapsed: airlink_engine::Duration::ZERO,
        });
        assert_eq!(a.header_len(), 24 + 20);
        let mut r = DccpPacket::new(PacketType::Request, 0);
        r.ccid = Some(3);
        assert_eq!(r.header_len(), 16 + 4 + 4);
    }

    #[test]
    fn no_data_packet_has_a_longer_header_than_the_bound() {
        let mut longest = 0;
        for kind in [PacketType::Data, PacketType::DataAck] {
            for ndp_count in [0, 1, 0xff, 0x100, 0xffff, 0x1_0000, u32::MAX] {
                for ack_ratio in [None, Some(u16::MAX)] {
                    let mut d = DccpPacket::new(kind, 1);
                    d.ack = kind.has_ack().then_some(0);
                    (d.ndp_count, d.ack_ratio, d.payload) = (ndp_count, ack_ratio, 1000);
                    longest = longest.max(d.header_len());
                }
            }
        }
        assert_eq!(longest, DccpPacket::MAX_DATA_HEADER_LEN);
        // 1424 B, the default and the DCCP study's largest payload, fits a 1500-byte MTU.
        assert_eq!(DccpPacket::max_data_payload(1500), 1444);
        assert_eq!(DccpPacket::max_data_payload(40), 0);
    }
}
