//! Physical layer of airlink: uncoded M-QAM on an AWGN channel (spec section A).
//!
//! What this layer is: closed-form symbol, bit and frame error probabilities of BPSK and
//! 4- to 256-QAM as a function of the SNR per symbol γ = Es/N0 ([`symbol_error_prob`],
//! [`bit_error_prob`], [`frame_error_prob`]); bit-error injection into a frame delivered with
//! errors ([`inject_symbol_errors`], [`inject_symbol_errors_given_error`]); and adaptive
//! modulation tables that pick a format from a *predicted* SNR ([`ModulationTable`]).
//!
//! What it must not do: know about time, channels, frames' contents or queues. The channel
//! (`airlink-channel`) supplies SNRs; the link layer (`airlink-link`) owns frames, ARQ and the
//! decision of when a table must be rebuilt. Everything here is a pure function of its
//! arguments, except the injectors, which draw only from the [`RngStream`] they are handed.
//! No wall clock, no global RNG, no I/O.
//!
//! Conventions: SNR arguments are linear γ = Es/N0 per symbol (spec A.1); `_db` in a name
//! means decibels.
//!
//! References: `spec/models.md` section A; \[S1\] Alfredsson/Brunstrom/Sternad (WIPEMU);
//! \[SF04\] Sternad & Falahati, PIMRC 2004; \[CY02\] Cho & Yoon, IEEE Trans. Commun. 50(7) 2002;
//! \[ZYW10\] Zhang/Yu/Wei, EURASIP JWCN 2010. Each module lists its deviations.
//!
//! [`RngStream`]: airlink_engine::RngStream
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod adaptive;
mod error_prob;
mod inject;
mod modulation;
mod special;

pub use adaptive::{
    expected_goodput, LocalSwitching, ModulationTable, SwitchingRule, TableError, REFRESH_STEP_DB,
};
pub use error_prob::{
    bit_error_prob, bit_error_prob_exact_gray, db_to_lin, frame_error_prob, frame_success_prob,
    lin_to_db, symbol_error_prob,
};
pub use inject::{inject_symbol_errors, inject_symbol_errors_given_error};
pub use modulation::{Modulation, OddKModel, ParseModulationError, ParseOddKModelError};
pub use special::{i0e, q_function};

/// Payload symbols per WIPEMU link-layer frame (one bin, spec A.7).
pub const WIPEMU_FRAME_SYMBOLS: u32 = 108;
