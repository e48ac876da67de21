//! Ports: where packets enter and leave the emulated network.
//!
//! The datapath has two ports, one facing the client and one facing the server. A port hands
//! the datapath IP packets and takes IP packets back; whatever framing the medium has stays
//! inside the port. The datapath carries a packet's [`LinkHeader`] through the links unread,
//! so that the port on the other side can send it on as it came.
//!
//! - [`TunPort`]: a TUN device (IP packets, no framing): the namespaces' network.
//! - [`crate::gateway::PacketSocketPort`]: a packet socket on a real interface (gateway
//!   mode): Ethernet frames, the header kept in the [`LinkHeader`]; frames other than IP
//!   (ARP, ...) pass straight to the other side inside the port.
//! - [`Captured`]: any port, with each packet it reads or writes recorded for the pcap files.
//! - `fake::FakePort` (tests): packets in memory, stamped with virtual time.
//!
//! The datapath is generic over its port type (static dispatch): a port costs no more than
//! the system call it makes.

use crate::timing::monotonic_ns;
use crate::writer::Record;
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

/// Bytes of an Ethernet header (destination, source, EtherType).
pub const ETHERNET_HEADER: usize = 14;

/// Bound of the bytes of pcap records waiting for the writer thread.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Which of the datapath's two ports: the one facing the client or the one facing the server.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Facing {
    Client,
    Server,
}

impl Facing {
    /// As in the pcap file names and the `events` table's `link` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Facing::Client => "client",
            Facing::Server => "server",
        }
    }
}

/// What a port needs to send a packet on as it came: the Ethernet header it arrived with
/// (gateway mode), nothing for a TUN device. Opaque to the datapath.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkHeader(pub(crate) Option<[u8; ETHERNET_HEADER]>);

/// A packet a port read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// Where the IP packet lies in the buffer given to [`Port::recv`].
    pub ip: Range<usize>,
    pub link: LinkHeader,
    /// When it was read (`CLOCK_MONOTONIC`, ns).
    pub mono_ns: u64,
}

/// What a port counted on its own.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames other than IP passed straight to the other side (gateway mode).
    pub passed_through: u64,
    /// Writes of such frames that failed.
    pub write_errors: u64,
    /// Packet records the writer thread could not take in time.
    pub records_lost: u64,
}

/// Where packets enter and leave the emulated network (see the module doc).
pub trait Port {
    /// The descriptor that becomes readable when a packet waits (for the datapath's `epoll`).
    fn fd(&self) -> RawFd;
    /// Reads the next IP packet into `buf` without blocking; `None` when none waits.
    fn recv(&mut self, buf: &mut [u8]) -> Option<Received>;
    /// Writes an IP packet out, with the link header it came with. `mono_ns`: the instant of
    /// the write, taken before it (the capture's timestamp).
    fn send(&mut self, packet: &[u8], link: &LinkHeader, mono_ns: u64) -> std::io::Result<()>;
    fn counters(&self) -> PortCounters {
        PortCounters::default()
    }
}

/// Reads one datagram or frame from `fd` without blocking: its length, `None` when none waits.
pub(crate) fn read_fd(fd: RawFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: a valid descriptor and buffer.
    let rc = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    (rc > 0).then_some(rc as usize)
}

/// Writes `packet` to `fd` as one datagram or frame, after `header` if there is one.
pub(crate) fn write_fd(fd: RawFd, header: Option<&[u8]>, packet: &[u8]) -> std::io::Result<()> {
    let rc = match header {
        Some(header) => {
            let iov = [
                libc::iovec {
                    iov_base: header.as_ptr() as *mut libc::c_void,
                    iov_len: header.len(),
                },
                libc::iovec {
                    iov_base: packet.as_ptr() as *mut libc::c_void,
                    iov_len: packet.len(),
                },
            ];
            // SAFETY: a valid descriptor and two valid buffers.
            unsafe { libc::writev(fd, iov.as_ptr(), 2) }
        }
        // SAFETY: a valid descriptor and buffer.
        None => unsafe { libc::write(fd, packet.as_ptr().cast(), packet.len()) },
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A TUN device (opened without packet information: each read is one IP packet).
pub struct TunPort(pub OwnedFd);

impl Port for TunPort {
    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    fn recv(&mut self, buf: &mut [u8]) -> Option<Received> {
        let len = read_fd(self.0.as_raw_fd(), buf)?;
        Some(Received {
            ip: 0..len,
            link: LinkHeader::default(),
            mono_ns: monotonic_ns(),
        })
    }

    fn send(&mut self, packet: &[u8], _link: &LinkHeader, _mono_ns: u64) -> std::io::Result<()> {
        write_fd(self.0.as_raw_fd(), None, packet)
    }
}

/// Any port, with each IP packet it reads (`outgoing`: sent by the host behind it) or writes
/// recorded for the writer thread's pcap files: the first `snaplen` bytes (0: no records).
/// Records are bounded in number (the channel) and in bytes ([`MAX_RECORD_BYTES`]); beyond
/// either a record is counted as lost, and the port never blocks.
pub struct Captured<P> {
    inner: P,
    facing: Facing,
    snaplen: u32,
    records: SyncSender<Record>,
    /// Bytes of packet records sent to the writer and not yet taken (the writer subtracts).
    record_bytes: Arc<AtomicU64>,
    lost: u64,
}

impl<P: Port> Captured<P> {
    pub fn new(
        inner: P,
        facing: Facing,
        snaplen: u32,
        records: SyncSender<Record>,
        record_bytes: Arc<AtomicU64>,
    ) -> Captured<P> {
        Captured {
            inner,
            facing,
            snaplen,
            records,
            record_bytes,
            lost: 0,
        }
    }

    fn capture(&mut self, outgoing: bool, mono_ns: u64, data: &[u8]) {
        if self.snaplen == 0 {
            return;
        }
        let keep = data.len().min(self.snaplen as usize);
        if self.record_bytes.fetch_add(keep as u64, Ordering::Relaxed) + keep as u64
            > MAX_RECORD_BYTES
        {
            self.record_bytes.fetch_sub(keep as u64, Ordering::Relaxed);
            self.lost += 1;
            return;
        }
        let record = Record::Packet {
            port: self.facing,
            outgoing,
            mono_ns,
            orig_len: data.len() as u32,
            data: data[..keep].to_vec(),
        };
        if let Err(TrySendError::Full(r) | TrySendError::Disconnected(r)) =
            self.records.try_send(record)
        {
            self.lost += 1;
            self.record_bytes.fetch_sub(r.bytes(), Ordering::Relaxed);
        }
    }
}

impl<P: Port> Port for Captured<P> {
    fn fd(&self) -> RawFd {
        self.inner.fd()
    }

    fn recv(&mut self, buf: &mut [u8]) -> Option<Received> {
        let got = self.inner.recv(buf)?;
        self.capture(true, got.mono_ns, &buf[got.ip.clone()]);
        Some(got)
    }

    fn send(&mut self, packet: &[u8], link: &LinkHeader, mono_ns: u64) -> std::io::Result<()> {
        self.inner.send(packet, link, mono_ns)?;
        self.capture(false, mono_ns, packet);
        Ok(())
    }

    fn counters(&self) -> PortCounters {
        let inner = self.inner.counters();
        PortCounters {
            records_lost: inner.records_lost + self.lost,
            ..inner
        }
    }
}

/// A port in memory, for tests of the datapath in virtual time.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use std::collections::VecDeque;

    /// Packets waiting to be read (with the instant they are read at) and packets written.
    #[derive(Default)]
    pub(crate) struct FakePort {
        pub(crate) incoming: VecDeque<(u64, Vec<u8>)>,
        pub(crate) written: Vec<Vec<u8>>,
    }

    impl Port for FakePort {
        /// Never polled: tests drive the datapath's steps themselves.
        fn fd(&self) -> RawFd {
            -1
        }

        fn recv(&mut self, buf: &mut [u8]) -> Option<Received> {
            let (mono_ns, data) = self.incoming.pop_front()?;
            buf[..data.len()].copy_from_slice(&data);
            Some(Received {
                ip: 0..data.len(),
                link: LinkHeader::default(),
                mono_ns,
            })
        }

        fn send(&mut self, packet: &[u8], _: &LinkHeader, _: u64) -> std::io::Result<()> {
            self.written.push(packet.to_vec());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakePort;
    use super::*;
    use std::sync::mpsc::sync_channel;

    fn captured(
        snaplen: u32,
        channel: usize,
    ) -> (Captured<FakePort>, std::sync::mpsc::Receiver<Record>) {
        let (tx, rx) = sync_channel(channel);
        let port = Captured::new(
            FakePort::default(),
            Facing::Server,
            snaplen,
            tx,
            Arc::new(AtomicU64::new(0)),
        );
        (port, rx)
    }

    /// What a captured port reads and writes is recorded, cut at the snap length, with the
    /// packet's own length and the instants the port gave.
    #[test]
    fn a_captured_port_records_both_ways_cut_at_the_snap_length() {
        let (mut port, records) = captured(4, 8);
        port.inner.incoming.push_back((7, vec![1, 2, 3, 4, 5, 6]));
        let mut buf = [0u8; 64];
        let got = port.recv(&mut buf).unwrap();
        assert_eq!((got.ip, got.mono_ns), (0..6, 7));
        port.send(&[9, 9], &LinkHeader::default(), 11).unwrap();
        assert_eq!(port.inner.written, vec![vec![9, 9]]);
        let seen: Vec<_> = records
            .try_iter()
            .map(|r| match r {
                Record::Packet {
                    port,
                    outgoing,
                    mono_ns,
                    orig_len,
                    data,
                } => (port, outgoing, mono_ns, orig_len, data),
                _ => panic!("a packet record"),
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (Facing::Server, true, 7, 6, vec![1, 2, 3, 4]),
                (Facing::Server, false, 11, 2, vec![9, 9]),
            ]
        );
        assert_eq!(port.counters(), PortCounters::default());
    }

    /// A full channel loses the record, counts it and gives its bytes back; no snap length
    /// records nothing.
    #[test]
    fn a_full_channel_loses_records_without_blocking() {
        let (mut port, records) = captured(100, 1);
        for t in 0..3 {
            port.send(&[t as u8; 10], &LinkHeader::default(), t)
                .unwrap();
        }
        assert_eq!(port.counters().records_lost, 2);
        assert_eq!(port.record_bytes.load(Ordering::Relaxed), 10);
        assert_eq!(records.try_iter().count(), 1);
        let (mut quiet, records) = captured(0, 8);
        quiet.send(&[1], &LinkHeader::default(), 0).unwrap();
        assert_eq!(records.try_iter().count(), 0);
    }
}
