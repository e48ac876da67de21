//! `[link.NAME.wlan]`: an 802.11g access point's shared medium and its stations (general form
//! only). The model is `airlink_link::WlanLink`; its rule header lists references and deviations.

use super::ModelConfig;
use crate::units::{Probability, QueueLimit, Rate, Time};
use crate::{check_queue, count, units, within, Invalid};
use airlink_engine::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[link.NAME.wlan]`: an 802.11g (ERP-OFDM) access point and its stations sharing one medium
/// under DCF. Every default is the standard's (IEEE 802.11-2007) for an all-ERP network at
/// 54 Mbit/s; see `crates/airlink-link/src/wlan.rs` for each source.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WlanConfig {
    /// The hosts associated with the access point at the start (none: only hand-offs bring some).
    pub stations: Vec<String>,
    /// Data frames' PHY rate: 6, 9, 12, 18, 24, 36, 48 or 54 Mbit/s. Default 54 Mbit/s.
    #[serde(default = "default_wlan_phy_rate")]
    pub phy_rate: Rate,
    /// The rate of MAC ACKs (a basic rate). Default 24 Mbit/s.
    #[serde(default = "default_wlan_basic_rate")]
    pub basic_rate: Rate,
    /// Slot time. Default 9 µs (short slot; 20 µs with 802.11b stations).
    #[serde(default = "default_wlan_slot")]
    pub slot: Time,
    /// Attempts of a frame before its packet is dropped. Default 7 (dot11ShortRetryLimit).
    #[serde(default = "default_wlan_retry_limit")]
    pub retry_limit: u32,
    /// Probability that a frame sent alone is received in error. Default 0.
    #[serde(default)]
    pub frame_error_rate: Probability,
    /// The contention window's first size, CW_min (aCWmin of the OFDM PHY). Default 15.
    #[serde(default = "default_wlan_cw_min")]
    pub cw_min: u32,
    /// The largest size it doubles to, CW_max (aCWmax). Default 1023.
    #[serde(default = "default_wlan_cw_max")]
    pub cw_max: u32,
    /// Each node's transmit queue (the access point's and every station's). Default 100 packets.
    #[serde(default = "default_wlan_queue")]
    pub queue: QueueLimit,
}

fn default_wlan_phy_rate() -> Rate {
    Rate(54_000_000)
}

fn default_wlan_basic_rate() -> Rate {
    Rate(24_000_000)
}

fn default_wlan_slot() -> Time {
    Time(Duration::from_micros(9))
}

fn default_wlan_retry_limit() -> u32 {
    7
}

fn default_wlan_cw_min() -> u32 {
    15
}

fn default_wlan_cw_max() -> u32 {
    1023
}

fn default_wlan_queue() -> QueueLimit {
    QueueLimit::Packets(100)
}

impl ModelConfig for WlanConfig {
    fn kind(&self) -> &'static str {
        "wlan"
    }
    fn check(&self, base: &[&str], min_packet: u64) -> Result<(), Invalid> {
        let w = self;
        let p = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let at = |k: &str| p(&[base, &["wlan", k]].concat());
        if base.first() != Some(&"link") {
            return Err((
                p(&[base, &["wlan"]].concat()),
                "a WLAN joins an access point and its stations: expected it in a [link.NAME] table, with [host] tables".into(),
            ));
        }
        const OFDM_MBPS: [u64; 8] = [6, 9, 12, 18, 24, 36, 48, 54];
        for (k, r) in [("phy_rate", w.phy_rate.0), ("basic_rate", w.basic_rate.0)] {
            if !OFDM_MBPS.iter().any(|&m| m * 1_000_000 == r) {
                return Err((
                    at(k),
                    format!(
                        "{}: expected an ERP-OFDM rate, one of 6, 9, 12, 18, 24, 36, 48, 54 Mbit/s",
                        units::Rate(r)
                    ),
                ));
            }
        }
        within(
            at("slot"),
            w.slot.0,
            Duration::from_micros(1),
            Duration::from_micros(100),
            "a slot",
        )?;
        count(at("retry_limit"), w.retry_limit, 1, 255, "attempts")?;
        count(
            at("cw_min"),
            w.cw_min,
            1,
            1023,
            "a minimum contention window",
        )?;
        if !(w.cw_min..=65535).contains(&w.cw_max) {
            return Err((
                at("cw_max"),
                format!("{}: expected cw_min ({}) to 65535", w.cw_max, w.cw_min),
            ));
        }
        check_queue(&w.queue, min_packet).map_err(|m| (at("queue"), m))?;
        for (i, s) in w.stations.iter().enumerate() {
            if w.stations[..i].contains(s) {
                return Err((
                    at("stations"),
                    format!("\"{s}\" is listed twice: expected each station once"),
                ));
            }
        }
        Ok(())
    }
}
