//! A LEO satellite access link: a bent pipe from a user terminal through the satellite it is
//! assigned to, down to a ground station, with Starlink's 15-second reconfigurations.
//!
//! The constellation is a Walker-delta shell `i: N/P/F` (inclination, satellites, planes,
//! phasing) on circular orbits of altitude `h`: satellite `j` of plane `k` has right ascension
//! `Ω_k = Ω₀ + 2πk/P` and argument of latitude `u = u₀ + 2πj/S + 2πFk/N + n·t`, with
//! `n = √(μ/a³)`, `a = R + h`. The Earth (a sphere of radius R) turns at ω_E under it; the
//! terminal and the ground station sit at fixed latitude and longitude.
//!
//! At every reconfiguration instant (every `interval`, the first at `first_reconfiguration`
//! after the start, and one at the start) the terminal is assigned the satellite that both it
//! and the ground station see at least `min_elevation` high: the highest above the terminal by
//! default. The assignment holds until the next instant (or, if the satellite sets first, the
//! link is out until then). A packet leaves the queue at a fixed `rate` and then takes the
//! propagation delay of the two slant ranges at that instant, terminal–satellite and
//! satellite–ground station, over c. For `handover_outage` after each instant at which the
//! satellite changes, packets are lost (the reconfiguration's loss burst).
//!
//! References: Walker, "Satellite constellations", J. Br. Interplanet. Soc. 37, 1984 (the
//! delta pattern); SpaceX FCC filing SAT-MOD-20200417-00037 (shell 1: 550 km, 53°, 72 planes of
//! 22, minimum elevation 25°); Tanveer et al., "Making Sense of Constellations", IMC 2023, and
//! Mohan et al., "A Multifaceted Look at Starlink Performance", WWW 2024 (reconfiguration every
//! 15 s at 12, 27, 42 and 57 s past the minute).
//!
//! | aspect | model | deviation |
//! |---|---|---|
//! | orbits | circular, Keplerian, no J2 precession | real orbits precess and are kept by thrusters |
//! | Earth | a sphere of 6371 km turning at 7.2921159e-5 rad/s | no ellipsoid, no atmosphere or weather |
//! | path | terminal → one satellite → ground station (bent pipe) | no inter-satellite links, no PoP or terrestrial backhaul |
//! | assignment | highest elevation seen by both, at each instant | Starlink's global scheduler's rule is unpublished |
//! | capacity | a fixed rate behind a drop-tail FIFO | measured capacity varies per slot |
//! | constellation phase | Ω₀, u₀ from the link's random stream (so seeds differ), or given | |
//! | delay changes | never reorder packets (a later packet waits behind an earlier one) | |

use crate::{DropReason, Link, LinkEvent, LinkSample, LinkStats, Packet, QueueLimit};
use airlink_engine::{Duration, Instant, RngStream};
use std::collections::VecDeque;
use std::f64::consts::PI;

/// Earth's mean radius, m.
pub const EARTH_RADIUS_M: f64 = 6_371_000.0;
/// Earth's gravitational parameter, m³/s².
pub const MU_EARTH: f64 = 3.986_004_418e14;
/// Earth's rotation rate, rad/s.
pub const EARTH_ROTATION: f64 = 7.292_115_9e-5;
/// Speed of light, m/s.
pub const SPEED_OF_LIGHT: f64 = 299_792_458.0;

/// A place on the Earth, degrees.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Place {
    pub lat_deg: f64,
    pub lon_deg: f64,
}

/// Parameters of a [`LeoLink`].
#[derive(Clone, Debug, PartialEq)]
pub struct LeoParams {
    pub altitude_m: f64,
    pub inclination_deg: f64,
    pub planes: u32,
    pub sats_per_plane: u32,
    /// Walker phasing factor F (0 ... planes − 1).
    pub phasing: u32,
    pub terminal: Place,
    pub ground_station: Place,
    pub min_elevation_deg: f64,
    pub interval: Duration,
    pub first_reconfiguration: Duration,
    pub handover_outage: Duration,
    pub rate_bps: u64,
    pub queue_limit: QueueLimit,
    /// Constellation phase (Ω₀, u₀) in radians; `None`: drawn from the link's stream.
    pub phase: Option<(f64, f64)>,
}

impl Default for LeoParams {
    fn default() -> Self {
        LeoParams {
            altitude_m: 550e3,
            inclination_deg: 53.0,
            planes: 72,
            sats_per_plane: 22,
            phasing: 39,
            terminal: Place {
                lat_deg: 51.5074,
                lon_deg: -0.1278,
            },
            ground_station: Place {
                lat_deg: 50.0481,
                lon_deg: -5.1822,
            },
            min_elevation_deg: 25.0,
            interval: Duration::from_secs(15),
            first_reconfiguration: Duration::from_secs(12),
            handover_outage: Duration::ZERO,
            rate_bps: 100_000_000,
            queue_limit: QueueLimit::Packets(1000),
            phase: None,
        }
    }
}

type Vec3 = [f64; 3];

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

/// The constellation's geometry: positions are a function of time alone.
#[derive(Clone, Debug)]
pub struct Shell {
    p: LeoParams,
    phase: (f64, f64),
}

impl Shell {
    pub fn new(p: LeoParams, phase: (f64, f64)) -> Shell {
        Shell { p, phase }
    }

    fn radius(&self) -> f64 {
        EARTH_RADIUS_M + self.p.altitude_m
    }

    pub fn satellites(&self) -> usize {
        (self.p.planes * self.p.sats_per_plane) as usize
    }

    /// Satellite `s`'s position (Earth-centred inertial, m) at `t` s.
    pub fn satellite(&self, s: usize, t: f64) -> Vec3 {
        let (planes, per) = (self.p.planes as f64, self.p.sats_per_plane as f64);
        let (k, j) = (
            (s as u32 / self.p.sats_per_plane) as f64,
            (s as u32 % self.p.sats_per_plane) as f64,
        );
        let a = self.radius();
        let n = (MU_EARTH / a.powi(3)).sqrt();
        let raan = self.phase.0 + 2.0 * PI * k / planes;
        let u = self.phase.1
            + 2.0 * PI * j / per
            + 2.0 * PI * self.p.phasing as f64 * k / (planes * per)
            + n * t;
        let i = self.p.inclination_deg.to_radians();
        let (so, co) = raan.sin_cos();
        let (su, cu) = u.sin_cos();
        [
            a * (co * cu - so * su * i.cos()),
            a * (so * cu + co * su * i.cos()),
            a * su * i.sin(),
        ]
    }

    /// A place's position (inertial, m) at `t` s.
    pub fn ground(place: Place, t: f64) -> Vec3 {
        let (lat, lon) = (
            place.lat_deg.to_radians(),
            place.lon_deg.to_radians() + EARTH_ROTATION * t,
        );
        [
            EARTH_RADIUS_M * lat.cos() * lon.cos(),
            EARTH_RADIUS_M * lat.cos() * lon.sin(),
            EARTH_RADIUS_M * lat.sin(),
        ]
    }

    /// (elevation in degrees, slant range in m) of satellite `s` from `place` at `t` s.
    pub fn look(&self, s: usize, place: Place, t: f64) -> (f64, f64) {
        let g = Self::ground(place, t);
        let d = sub(self.satellite(s, t), g);
        let range = norm(d);
        let up = dot(d, g) / (range * norm(g));
        (up.clamp(-1.0, 1.0).asin().to_degrees(), range)
    }

    /// The satellite both ends see above the minimum elevation, highest above the terminal.
    pub fn assign(&self, t: f64) -> Option<usize> {
        let min = self.p.min_elevation_deg;
        (0..self.satellites())
            .filter_map(|s| {
                let (el, _) = self.look(s, self.p.terminal, t);
                (el >= min && self.look(s, self.p.ground_station, t).0 >= min).then_some((s, el))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(s, _)| s)
    }

    /// One-way propagation delay through satellite `s` at `t` s, and whether both ends still
    /// see it (above the horizon).
    pub fn delay(&self, s: usize, t: f64) -> (Duration, bool) {
        let (e1, r1) = self.look(s, self.p.terminal, t);
        let (e2, r2) = self.look(s, self.p.ground_station, t);
        (
            Duration::from_secs_f64((r1 + r2) / SPEED_OF_LIGHT),
            e1 > 0.0 && e2 > 0.0,
        )
    }
}

/// A LEO access link; see the module documentation.
pub struct LeoLink<P> {
    shell: Shell,
    /// (epoch number, its satellite, whether it changed from the epoch before), cached.
    epoch: Option<(u64, Option<usize>, bool)>,
    last_departure: Instant,
    last_due: Instant,
    backlog: VecDeque<(Instant, u32)>,
    backlog_bytes: u64,
    outbox: VecDeque<(Instant, P)>,
    events: VecDeque<LinkEvent>,
    stats: LinkStats,
}

impl<P: Packet> LeoLink<P> {
    /// The link; its constellation phase comes from `rng` unless the parameters give it.
    pub fn new(params: LeoParams, mut rng: RngStream) -> Self {
        let phase = params.phase.unwrap_or_else(|| {
            (
                rng.uniform() * 2.0 * PI / params.planes.max(1) as f64,
                rng.uniform() * 2.0 * PI / params.sats_per_plane.max(1) as f64,
            )
        });
        LeoLink {
            shell: Shell::new(params, phase),
            epoch: None,
            last_departure: Instant::ZERO,
            last_due: Instant::ZERO,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
        }
    }

    pub fn shell(&self) -> &Shell {
        &self.shell
    }

    /// The epoch holding `t`: 0 before the first reconfiguration, then one per interval.
    fn epoch_of(&self, t: Instant) -> (u64, Instant) {
        let p = &self.shell.p;
        let first = p.first_reconfiguration.as_nanos();
        let step = p.interval.as_nanos().max(1);
        let ns = t.as_nanos();
        if ns < first {
            return (0, Instant::ZERO);
        }
        let k = (ns - first) / step;
        (k + 1, Instant::from_nanos(first + k * step))
    }

    /// The reconfiguration instants in [from, to).
    pub fn reconfigurations(&self, from: Instant, to: Instant) -> Vec<Instant> {
        let p = &self.shell.p;
        let mut t = p.first_reconfiguration.as_nanos();
        let mut out = Vec::new();
        while t < to.as_nanos() {
            if t >= from.as_nanos() {
                out.push(Instant::from_nanos(t));
            }
            t += p.interval.as_nanos().max(1);
        }
        out
    }

    /// The satellite of `t`'s epoch, and whether the epoch began with a handover.
    fn assignment(&mut self, t: Instant) -> (Option<usize>, bool, Instant) {
        let (k, start) = self.epoch_of(t);
        if let Some((ek, sat, changed)) = self.epoch {
            if ek == k {
                return (sat, changed, start);
            }
        }
        let sat = self.shell.assign(start.as_nanos() as f64 / 1e9);
        let changed = k > 0 && {
            let (_, prev_start) =
                self.epoch_of(Instant::from_nanos(start.as_nanos().saturating_sub(1)));
            self.shell.assign(prev_start.as_nanos() as f64 / 1e9) != sat
        };
        self.epoch = Some((k, sat, changed));
        (sat, changed, start)
    }

    fn drop_packet(&mut self, at: Instant, pkt: &P, reason: DropReason) {
        let (flow, bytes) = (pkt.flow(), pkt.wire_len());
        self.stats
            .record_drop(&mut self.events, at, flow, bytes, reason);
    }
}

impl<P: Packet> Link<P> for LeoLink<P> {
    fn enqueue(&mut self, now: Instant, pkt: P) {
        self.stats.packets_in += 1;
        while self.backlog.front().is_some_and(|(d, _)| *d <= now) {
            let (_, len) = self.backlog.pop_front().expect("non-empty");
            self.backlog_bytes -= len as u64;
        }
        let len = pkt.wire_len();
        let limit = self.shell.p.queue_limit;
        if limit.is_full(self.backlog.len(), self.backlog_bytes, len as u64) {
            self.drop_packet(now, &pkt, DropReason::Queue);
            return;
        }
        let departure = self.last_departure.max(now)
            + Duration::for_bits(len as u64 * 8, self.shell.p.rate_bps.max(1));
        self.last_departure = departure;
        self.backlog.push_back((departure, len));
        self.backlog_bytes += len as u64;
        let (sat, changed, start) = self.assignment(departure);
        let in_outage = changed && departure < start + self.shell.p.handover_outage;
        let path = sat.map(|s| self.shell.delay(s, departure.as_nanos() as f64 / 1e9));
        match path {
            Some((delay, true)) if !in_outage => {
                let due = (departure + delay).max(self.last_due);
                self.last_due = due;
                self.stats.packets_out += 1;
                self.stats.bytes_out += len as u64;
                self.outbox.push_back((due, pkt));
            }
            _ => self.drop_packet(departure, &pkt, DropReason::Handoff),
        }
    }

    fn poll_at(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self) -> Option<(Instant, P)> {
        self.outbox.pop_front()
    }

    fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }

    fn sample(&mut self, now: Instant) -> LinkSample {
        let waiting = self.backlog.iter().filter(|(d, _)| *d > now);
        LinkSample {
            queue_packets: waiting.clone().count() as u32,
            queue_bytes: waiting.map(|(_, l)| *l as u64).sum(),
            radio: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestPacket;

    fn one_satellite_over_the_equator() -> LeoParams {
        LeoParams {
            inclination_deg: 0.0,
            planes: 1,
            sats_per_plane: 1,
            phasing: 0,
            terminal: Place {
                lat_deg: 0.0,
                lon_deg: 0.0,
            },
            ground_station: Place {
                lat_deg: 0.0,
                lon_deg: 0.0,
            },
            min_elevation_deg: 0.0,
            phase: Some((0.0, 0.0)),
            ..Default::default()
        }
    }

    #[test]
    fn slant_range_delay_matches_the_geometry_by_hand() {
        let shell = Shell::new(one_satellite_over_the_equator(), (0.0, 0.0));
        let a = EARTH_RADIUS_M + 550e3;
        // t = 0: straight overhead, 550 km up and 550 km down.
        let (d0, seen) = shell.delay(0, 0.0);
        assert!(seen);
        assert!(
            (d0.as_secs_f64() - 2.0 * 550e3 / SPEED_OF_LIGHT).abs() < 1e-9,
            "{d0}"
        );
        // t = 60 s: the satellite has moved (n − ω_E)·60 rad ahead of the place; the law of
        // cosines gives the range.
        let n = (MU_EARTH / a.powi(3)).sqrt();
        let angle = (n - EARTH_ROTATION) * 60.0;
        let range =
            (a * a + EARTH_RADIUS_M.powi(2) - 2.0 * a * EARTH_RADIUS_M * angle.cos()).sqrt();
        let (d60, seen) = shell.delay(0, 60.0);
        assert!(seen);
        assert!(
            (d60.as_secs_f64() - 2.0 * range / SPEED_OF_LIGHT).abs() < 1e-9,
            "{d60} vs {range}"
        );
        // 60 s at ≈ 0.00102 rad/s relative: about 391 km along the ground, ≈ 685 km of slant range.
        assert!((range / 1e3 - 685.0).abs() < 2.0, "{range}");
    }

    fn delays(params: LeoParams, seconds: u64, every_ms: u64) -> Vec<(f64, Option<f64>)> {
        let mut l: LeoLink<TestPacket> = LeoLink::new(params, RngStream::derive(1, "leo"));
        let mut out = Vec::new();
        for i in 0..seconds * 1000 / every_ms {
            let now = Instant::from_millis(i * every_ms);
            l.enqueue(now, TestPacket::new(i as u32, 64));
            let d = l
                .poll_output()
                .map(|(at, _)| (at.as_nanos() - now.as_nanos()) as f64 / 1e6);
            out.push((now.as_nanos() as f64 / 1e9, d));
        }
        out
    }

    #[test]
    fn the_one_way_delay_is_never_below_twice_the_altitude_over_c() {
        let bound_ms = 2.0 * 550e3 / SPEED_OF_LIGHT * 1e3;
        let d = delays(LeoParams::default(), 120, 50);
        let seen: Vec<f64> = d.iter().filter_map(|x| x.1).collect();
        assert!(
            seen.len() > d.len() / 2,
            "the default shell serves London most of the time"
        );
        assert!(seen.iter().all(|&x| x >= bound_ms), "{bound_ms}");
    }

    #[test]
    fn the_delay_jumps_only_at_reconfigurations_and_is_smooth_between() {
        let d = delays(LeoParams::default(), 120, 20);
        let instants = [12.0, 27.0, 42.0, 57.0, 72.0, 87.0, 102.0, 117.0];
        let mut jumps = 0;
        for w in d.windows(2) {
            let (Some(a), Some(b)) = (w[0].1, w[1].1) else {
                continue;
            };
            let crosses = instants.iter().any(|&t| w[0].0 < t && t <= w[1].0 + 1e-9);
            if crosses && (b - a).abs() > 0.05 {
                jumps += 1;
            }
            if !crosses {
                // A satellite at 7.6 km/s changes each slant range by at most 152 m per 20 ms.
                assert!((b - a).abs() < 0.002, "{:?} {:?}", w[0], w[1]);
            }
        }
        assert!(jumps >= 3, "{jumps} jumps");
    }

    #[test]
    fn a_handover_outage_loses_the_packets_in_it() {
        let params = LeoParams {
            handover_outage: Duration::from_millis(100),
            ..Default::default()
        };
        let d = delays(params, 60, 10);
        let lost: Vec<f64> = d.iter().filter(|x| x.1.is_none()).map(|x| x.0).collect();
        // Every loss is within 100 ms after a reconfiguration (or while nothing is seen).
        let near = lost
            .iter()
            .filter(|&&t| {
                [12.0, 27.0, 42.0, 57.0]
                    .iter()
                    .any(|&r| t >= r && t < r + 0.1)
            })
            .count();
        assert!(near >= 10, "{near} of {}", lost.len());
    }
}
