//! Links taken down by timed changes, and the packets their outages hold.
//!
//! An outage catches a packet arriving at the down link, or on its way from it (sent before
//! the link went down, due at the next stage after). A link taken down with `packets = "kept"`
//! holds what it catches until it is up again; else what it catches is lost. Both drivers keep
//! their outages here and only say where a caught packet goes next.

use crate::LinkId;

/// The outages of a network's links. `In` is what a driver holds of a packet that arrived at a
/// down link, `Out` of one on its way from it.
pub struct Outages<In, Out> {
    /// Per link: down (and whether it keeps what it catches), or up.
    state: Vec<Option<bool>>,
    held_in: Vec<Vec<In>>,
    held_out: Vec<Vec<Out>>,
    /// Per link: packets lost to its outages (the summary's `outage_drops`).
    drops: Vec<u64>,
    /// Links down now: while none is, packets need no check.
    down: usize,
}

impl<In, Out> Outages<In, Out> {
    pub fn new(links: usize) -> Self {
        Outages {
            state: (0..links).map(|_| None).collect(),
            held_in: (0..links).map(|_| Vec::new()).collect(),
            held_out: (0..links).map(|_| Vec::new()).collect(),
            drops: vec![0; links],
            down: 0,
        }
    }

    /// Packets the outages hold now (for the driver's memory estimate).
    pub fn held(&self) -> usize {
        self.held_in.iter().map(Vec::len).sum::<usize>()
            + self.held_out.iter().map(Vec::len).sum::<usize>()
    }

    /// Whether any link is down.
    #[inline]
    pub fn any(&self) -> bool {
        self.down > 0
    }

    #[inline]
    pub fn is_down(&self, l: LinkId) -> bool {
        self.state[l as usize].is_some()
    }

    /// Link `l` goes down (it was up: the scenario's changes alternate).
    pub fn take_down(&mut self, l: LinkId, keep: bool) {
        debug_assert!(self.state[l as usize].is_none(), "link {l} is down already");
        self.state[l as usize] = Some(keep);
        self.down += 1;
    }

    /// Link `l` is up again: what it held, the packets that were on their way from it (to go
    /// on first) and those that arrived at it (to enter it).
    pub fn bring_up(&mut self, l: LinkId) -> (Vec<Out>, Vec<In>) {
        if self.state[l as usize].take().is_some() {
            self.down -= 1;
        }
        (
            std::mem::take(&mut self.held_out[l as usize]),
            std::mem::take(&mut self.held_in[l as usize]),
        )
    }

    /// A packet arrives at down link `l`: kept (`None`) or lost, given back to be accounted.
    pub fn catch_arriving(&mut self, l: LinkId, pkt: In) -> Option<In> {
        if self.state[l as usize] == Some(true) {
            self.held_in[l as usize].push(pkt);
            return None;
        }
        self.drops[l as usize] += 1;
        Some(pkt)
    }

    /// A packet on its way from down link `l`: kept (`None`) or lost, given back.
    pub fn catch_leaving(&mut self, l: LinkId, pkt: Out) -> Option<Out> {
        if self.state[l as usize] == Some(true) {
            self.held_out[l as usize].push(pkt);
            return None;
        }
        self.drops[l as usize] += 1;
        Some(pkt)
    }

    /// Packets lost to link `l`'s outages.
    pub fn drops(&self, l: LinkId) -> u64 {
        self.drops[l as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_outage_gives_back_what_it_held_and_a_lost_one_counts_it() {
        let mut o: Outages<u32, &str> = Outages::new(2);
        assert!(!o.any());
        o.take_down(1, true);
        assert!(o.any() && o.is_down(1) && !o.is_down(0));
        assert_eq!(o.catch_arriving(1, 7), None);
        assert_eq!(o.catch_leaving(1, "on its way"), None);
        assert_eq!(o.bring_up(1), (vec!["on its way"], vec![7]));
        assert!(!o.any());
        o.take_down(0, false);
        assert_eq!(o.catch_arriving(0, 8), Some(8));
        assert_eq!(o.catch_leaving(0, "lost"), Some("lost"));
        assert_eq!((o.drops(0), o.drops(1)), (2, 0));
        assert_eq!(o.bring_up(0), (vec![], vec![]));
    }
}
