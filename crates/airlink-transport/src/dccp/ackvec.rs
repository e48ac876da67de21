//! The Ack Vector option (RFC 4340 §11.4) and the receiver's Ack Vector state.
//!
//! Each byte is `state << 6 | run`: 2-bit state (0 received, 1 ECN-marked, 3 not received;
//! 2 is reserved and makes the option malformed) and a 6-bit run length; the byte covers
//! `run + 1` consecutive sequence numbers, the first byte starting at the Ack Number and each
//! run walking further back.
//!
//! | RFC 4340 | here |
//! |---|---|
//! | several Ack Vector options, up to 253 bytes each | one option of at most `max_bytes` (default 253); older packets beyond it are not reported |
//! | buffer cleared on Ack-of-Ack (§11.4.2) | an Ack-of-Ack is an incoming Ack Number equal to the sequence number of one of our Ack-Vector Acks; state at or below the Ack Number that Ack carried is dropped |
//! | ECN marks (state 1) | decoded, never produced (no ECN in the links) |

use std::collections::VecDeque;

/// Packet state in an Ack Vector.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AckState {
    Received = 0,
    EcnMarked = 1,
    NotReceived = 3,
}

/// A run of `len` packets with sequence numbers `high`, `high − 1`, …, `high − len + 1`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub high: u64,
    pub len: u64,
    pub state: AckState,
}

impl Run {
    pub fn low(&self) -> u64 {
        self.high + 1 - self.len
    }
}

/// Why an Ack Vector cannot be decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckVectorError {
    /// A byte has the reserved state 2.
    ReservedState,
    /// The runs walk below sequence number 0.
    BelowZero,
}

/// Encodes states given from `ack` backwards into at most `max_bytes` bytes; returns the bytes
/// and how many sequence numbers they cover.
pub fn encode(states: impl IntoIterator<Item = AckState>, max_bytes: usize) -> (Vec<u8>, u64) {
    let mut out: Vec<u8> = Vec::new();
    let mut covered = 0u64;
    let mut cur: Option<(AckState, u8)> = None;
    for s in states {
        match cur {
            Some((st, run)) if st == s && run < 63 => cur = Some((st, run + 1)),
            Some((st, run)) => {
                if out.len() == max_bytes {
                    return (out, covered);
                }
                out.push(((st as u8) << 6) | run);
                covered += run as u64 + 1;
                cur = Some((s, 0));
            }
            None => cur = Some((s, 0)),
        }
    }
    if let Some((st, run)) = cur {
        if out.len() < max_bytes {
            out.push(((st as u8) << 6) | run);
            covered += run as u64 + 1;
        }
    }
    (out, covered)
}

/// Decodes an Ack Vector carried with Ack Number `ack` into runs, newest first.
pub fn decode(ack: u64, bytes: &[u8]) -> Result<Vec<Run>, AckVectorError> {
    let mut runs = Vec::with_capacity(bytes.len());
    let mut high = Some(ack);
    for &b in bytes {
        let state = match b >> 6 {
            0 => AckState::Received,
            1 => AckState::EcnMarked,
            3 => AckState::NotReceived,
            _ => return Err(AckVectorError::ReservedState),
        };
        let len = (b & 0x3f) as u64 + 1;
        let h = high.ok_or(AckVectorError::BelowZero)?;
        if len > h + 1 {
            return Err(AckVectorError::BelowZero);
        }
        runs.push(Run {
            high: h,
            len,
            state,
        });
        high = h.checked_sub(len);
    }
    Ok(runs)
}

/// The receiver's record of what arrived, from `base` up to GSR, and of its Ack-Vector Acks.
#[derive(Clone, Debug)]
pub struct AckVectorBuffer {
    /// Lowest sequence number still reported.
    base: u64,
    /// `received[i]` is the state of `base + i`; the last entry is GSR.
    received: VecDeque<bool>,
    /// Our Acks that carried a vector: (their sequence number, the Ack Number they carried).
    sent: VecDeque<(u64, u64)>,
    max_bytes: usize,
    /// Cap on tracked packets, so a peer that never acks our acks cannot grow the state.
    max_packets: usize,
}

impl AckVectorBuffer {
    pub fn new(max_bytes: usize) -> Self {
        AckVectorBuffer {
            base: 0,
            received: VecDeque::new(),
            sent: VecDeque::new(),
            max_bytes,
            max_packets: max_bytes.max(1) * 64,
        }
    }

    /// Greatest sequence number received, if any is tracked.
    pub fn gsr(&self) -> Option<u64> {
        (!self.received.is_empty()).then(|| self.base + self.received.len() as u64 - 1)
    }

    /// Packets currently tracked.
    pub fn len(&self) -> usize {
        self.received.len()
    }

    pub fn is_empty(&self) -> bool {
        self.received.is_empty()
    }

    /// Records the arrival of `seq`; returns false for a duplicate or a packet below the
    /// trimmed state (already reported and acknowledged).
    pub fn record(&mut self, seq: u64) -> bool {
        if self.received.is_empty() {
            if seq < self.base {
                return false;
            }
            self.base = seq;
            self.received.push_back(true);
            return true;
        }
        if seq < self.base {
            return false;
        }
        let idx = (seq - self.base) as usize;
        if idx < self.received.len() {
            return !std::mem::replace(&mut self.received[idx], true);
        }
        let gap = idx - self.received.len();
        if gap >= self.max_packets {
            self.received.clear();
            self.base = seq;
        } else {
            self.received.extend(std::iter::repeat_n(false, gap));
        }
        self.received.push_back(true);
        while self.received.len() > self.max_packets {
            self.received.pop_front();
            self.base += 1;
        }
        true
    }

    /// The Ack Vector for an Ack with Ack Number = GSR, to be sent with sequence number
    /// `ack_seq`. `None` when nothing is tracked.
    pub fn build(&mut self, ack_seq: u64) -> Option<(u64, Vec<u8>)> {
        let gsr = self.gsr()?;
        let states = self.received.iter().rev().map(|&r| {
            if r {
                AckState::Received
            } else {
                AckState::NotReceived
            }
        });
        let (bytes, _) = encode(states, self.max_bytes);
        self.sent.push_back((ack_seq, gsr));
        if self.sent.len() > 64 {
            self.sent.pop_front();
        }
        Some((gsr, bytes))
    }

    /// The peer acknowledged packet `ackno`: if it is one of our vector-carrying Acks, forget
    /// the state that Ack reported.
    pub fn on_ack_of_ack(&mut self, ackno: u64) {
        let Some(pos) = self.sent.iter().position(|&(s, _)| s == ackno) else {
            return;
        };
        let (_, covered) = self.sent[pos];
        self.sent.drain(..=pos);
        while self.base <= covered && !self.received.is_empty() {
            self.received.pop_front();
            self.base += 1;
        }
        if self.received.is_empty() {
            self.base = self.base.max(covered + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_example_layout() {
        // Ack 10; 10..8 received, 7..6 lost, 5 received.
        use AckState::*;
        let (v, n) = encode(
            [
                Received,
                Received,
                Received,
                NotReceived,
                NotReceived,
                Received,
            ],
            253,
        );
        assert_eq!(v, [0x02, 0xc1, 0x00]);
        assert_eq!(n, 6);
        let runs = decode(10, &v).unwrap();
        assert_eq!(
            runs.iter().map(|r| (r.high, r.len)).collect::<Vec<_>>(),
            [(10, 3), (7, 2), (5, 1)]
        );
        assert_eq!(decode(10, &[0x80]), Err(AckVectorError::ReservedState));
        assert_eq!(decode(2, &[0x03]), Err(AckVectorError::BelowZero));
        // Runs longer than 64 split.
        let (v, _) = encode(std::iter::repeat_n(Received, 130), 253);
        assert_eq!(v, [0x3f, 0x3f, 0x01]);
        let (v, n) = encode(std::iter::repeat_n(Received, 130), 2);
        assert_eq!((v.len(), n), (2, 128));
    }

    #[test]
    fn buffer_records_and_trims_on_ack_of_ack() {
        let mut b = AckVectorBuffer::new(253);
        for s in [1, 2, 4, 5] {
            assert!(b.record(s));
        }
        assert!(!b.record(4), "duplicate");
        let (ack, v) = b.build(100).unwrap();
        assert_eq!(ack, 5);
        assert_eq!(v, [0x01, 0xc0, 0x01]);
        assert!(b.record(3), "late arrival fills the hole");
        b.record(6);
        b.on_ack_of_ack(99);
        assert_eq!(b.len(), 6, "not one of our acks");
        b.on_ack_of_ack(100);
        assert_eq!(b.len(), 1, "state up to 5 dropped");
        let (ack, v) = b.build(101).unwrap();
        assert_eq!((ack, v), (6, vec![0x00]));
        assert!(!b.record(2), "below the trimmed state");
    }
}
