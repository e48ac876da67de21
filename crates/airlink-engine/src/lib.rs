//! Time and randomness: the bottom layer of airlink.
//!
//! Every model in airlink is a deterministic state machine that is *handed* the current
//! time and its own random stream. This crate provides the three things they share:
//!
//! - [`Instant`] and [`Duration`]: integer nanoseconds, so any time can be constructed in a
//!   test and no floating-point drift enters the schedule;
//! - [`RngStream`]: a version-stable generator whose seed is derived from the run seed and a
//!   stable component *name* (never construction order), so adding a flow does not change the
//!   draws of the channel (common random numbers);
//! - [`EventQueue`]: a priority queue with a specified total order for simultaneous events.
//!
//! This crate must not read the wall clock, the OS entropy pool, or do I/O.

mod queue;
mod rng;
mod time;

pub use queue::{EventKey, EventQueue};
pub use rng::{derive_seed, RngStream};
pub use time::{Duration, Instant};
