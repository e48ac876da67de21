//! Values that a trace-driven link takes from files besides its capacity: a one-way delay and a
//! loss probability over time, and the CSV form that gives capacity, delay and loss together.
//!
//! A **series file** holds a piecewise-constant value that repeats, in one of two layouts
//! (chosen per file by the number of columns of its first data line):
//!
//! - one value per line, each holding for a fixed interval (LeoReplayer's one-way delay traces:
//!   one delay in ms per 10 ms): line `i` (from 0) covers `[i·interval, (i+1)·interval)`; the
//!   series repeats after `lines·interval`;
//! - two columns `time_ms value` (blank, tab or comma between them): each row holds from its
//!   time until the next row's; times are taken relative to the first row's and never
//!   decrease; the last row holds as long as the row before it (the series repeats then).
//!
//! Lines starting with `#` and blank lines are skipped. Delays are in milliseconds (decimals
//! allowed), losses are probabilities in [0, 1].
//!
//! The **CSV form** (`format = "csv"`) describes a link from one's own measurements: a header
//! naming the columns, then one row per measurement, each holding until the next (the last as
//! long as the one before it), and the whole repeating:
//!
//! ```text
//! time_s,rate_mbps,delay_ms,loss
//! 0,12.5,20,0
//! 0.5,3.0,45,0.01
//! ```
//!
//! The time column is `time_s` or `time_ms` and comes first; the rate column (`rate_bps`,
//! `rate_kbps` or `rate_mbps`) is required; `delay_ms` and `loss` are optional. The rate is
//! turned into delivery opportunities of the trace's opportunity size: within each
//! millisecond, the bytes the rate allows accumulate and each full opportunity becomes one at
//! that millisecond (a Mahimahi trace of the same mean rate, to within one opportunity).
//!
//! | aspect | model | note |
//! |---|---|---|
//! | value between rows | the earlier row's (a step) | LeoReplayer steps its delay every 10 ms likewise |
//! | capacity from a rate | whole opportunities per ms, fractions carried over | the rows' times are rounded to the ms |

use crate::trace::{Trace, TraceError, MAX_TIMESTAMP_MS};
use airlink_engine::Duration;

/// The most opportunities a CSV trace may make per period (as many as a 64 MiB Mahimahi file).
const MAX_CSV_OPPORTUNITIES: u64 = 8 << 20;

/// A piecewise-constant value over time that repeats with a period.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Start of each step within a period, ns; the first is 0.
    starts_ns: Vec<u64>,
    values: Vec<f64>,
    period_ns: u64,
}

/// What a series holds, for bounds and messages.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// A one-way delay in ms, 0 to 60 s.
    DelayMs,
    /// A loss probability in [0, 1].
    Loss,
}

impl SeriesKind {
    fn check(self, v: f64) -> Result<(), String> {
        match self {
            SeriesKind::DelayMs if (0.0..=60_000.0).contains(&v) => Ok(()),
            SeriesKind::DelayMs => Err("expected a delay of 0 to 60000 ms".into()),
            SeriesKind::Loss if (0.0..=1.0).contains(&v) => Ok(()),
            SeriesKind::Loss => Err("expected a probability from 0 to 1".into()),
        }
    }
}

impl Series {
    /// A constant value.
    pub fn constant(value: f64) -> Series {
        Series {
            starts_ns: vec![0],
            values: vec![value],
            period_ns: 1_000_000,
        }
    }

    /// The value at `t_ns` after the series' start (the series repeats).
    pub fn at(&self, t_ns: u64) -> f64 {
        let within = t_ns % self.period_ns;
        let i = self.starts_ns.partition_point(|&s| s <= within);
        self.values[i - 1]
    }

    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// Parses a series file (see the module documentation); `interval` is the step of a
    /// one-column file.
    pub fn parse(
        text: &str,
        source: &str,
        kind: SeriesKind,
        interval: Duration,
    ) -> Result<Series, TraceError> {
        let err = |line: Option<usize>, message: String| TraceError {
            source: source.into(),
            line,
            message,
        };
        let rows = numeric_rows(text, source, 0)?;
        let Some((_, first)) = rows.first() else {
            return Err(err(
                None,
                "empty file: expected one value per line, or `time_ms value` per line".into(),
            ));
        };
        let columns = first.len();
        if columns > 2 {
            return Err(err(
                Some(rows[0].0),
                format!("{columns} columns: expected one value per line, or two: `time_ms value`"),
            ));
        }
        let mut starts_ns = Vec::with_capacity(rows.len());
        let mut values = Vec::with_capacity(rows.len());
        let mut prev_time = f64::NEG_INFINITY;
        for (n, row) in &rows {
            if row.len() != columns {
                return Err(err(
                    Some(*n),
                    format!(
                        "{} columns: expected {columns}, as on the first line",
                        row.len()
                    ),
                ));
            }
            let v = *row.last().expect("a row has a column");
            kind.check(v).map_err(|m| err(Some(*n), m))?;
            if columns == 2 {
                if row[0] < prev_time {
                    return Err(err(
                        Some(*n),
                        "its time is before the previous row's: expected non-decreasing times"
                            .into(),
                    ));
                }
                prev_time = row[0];
                let t = ms_to_ns(row[0] - rows[0].1[0]).map_err(|m| err(Some(*n), m))?;
                starts_ns.push(t);
            } else {
                starts_ns.push(starts_ns.len() as u64 * interval.as_nanos());
            }
            values.push(v);
        }
        let period_ns = if columns == 1 {
            starts_ns.len() as u64 * interval.as_nanos()
        } else {
            last_row_end(&starts_ns)
        };
        dedup_steps(Series {
            starts_ns,
            values,
            period_ns,
        })
        .map_err(|m| err(None, m))
    }
}

/// Where a two-column series ends: its last row holds as long as the row before it (1 ms for a
/// single row or a last step of zero length).
fn last_row_end(starts_ns: &[u64]) -> u64 {
    let last = *starts_ns.last().expect("non-empty");
    let step = match starts_ns {
        [.., a, b] if b > a => b - a,
        _ => 1_000_000,
    };
    last + step
}

/// Keeps the last of several rows that start at the same instant (it is the one in force).
fn dedup_steps(s: Series) -> Result<Series, String> {
    if s.period_ns == 0 {
        return Err("the series has no length: expected a positive interval".into());
    }
    let mut out = Series {
        starts_ns: Vec::with_capacity(s.starts_ns.len()),
        values: Vec::with_capacity(s.values.len()),
        period_ns: s.period_ns,
    };
    for (t, v) in s.starts_ns.into_iter().zip(s.values) {
        if out.starts_ns.last() == Some(&t) {
            *out.values.last_mut().expect("same length") = v;
        } else {
            out.starts_ns.push(t);
            out.values.push(v);
        }
    }
    Ok(out)
}

fn ms_to_ns(ms: f64) -> Result<u64, String> {
    if !(0.0..=MAX_TIMESTAMP_MS as f64).contains(&ms) {
        return Err(format!(
            "expected a time of 0 to {MAX_TIMESTAMP_MS} ms after the first row's"
        ));
    }
    Ok((ms * 1e6).round() as u64)
}

/// The data lines of a file as numbers, with their 1-based line numbers; `#` lines, blank
/// lines and (for CSV) the header are not data. A line's text is never shown in a message.
fn numeric_rows(
    text: &str,
    source: &str,
    skip: usize,
) -> Result<Vec<(usize, Vec<f64>)>, TraceError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate().skip(skip) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let row: Option<Vec<f64>> = split(line)
            .map(|f| f.parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect();
        let row = row.ok_or_else(|| TraceError {
            source: source.into(),
            line: Some(i + 1),
            message: "not a number: expected decimal numbers separated by blanks or commas".into(),
        })?;
        rows.push((i + 1, row));
    }
    Ok(rows)
}

fn split(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
}

/// A link described by a CSV file: its capacity, and its delay and loss if the file has them.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvTrace {
    pub capacity: Trace,
    pub delay_ms: Option<Series>,
    pub loss: Option<Series>,
}

impl CsvTrace {
    /// Parses the CSV form (see the module documentation); each opportunity carries
    /// `opportunity_bytes`.
    pub fn parse(text: &str, source: &str, opportunity_bytes: u32) -> Result<CsvTrace, TraceError> {
        let err = |line: Option<usize>, message: String| TraceError {
            source: source.into(),
            line,
            message,
        };
        const EXPECTED: &str = "expected a header such as `time_s,rate_mbps,delay_ms,loss`: the time (time_s or time_ms) first, a rate (rate_bps, rate_kbps or rate_mbps), optionally delay_ms and loss";
        let mut lines = text.lines().enumerate().filter(|(_, l)| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('#')
        });
        let Some((h, header)) = lines.next() else {
            return Err(err(None, format!("empty file: {EXPECTED}")));
        };
        let names: Vec<&str> = split(header.trim()).collect();
        let time_scale = match names.first() {
            Some(&"time_s") => 1e3,
            Some(&"time_ms") => 1.0,
            _ => {
                return Err(err(
                    Some(h + 1),
                    format!("the first column is not a time: {EXPECTED}"),
                ))
            }
        };
        let (mut rate, mut delay, mut loss) = (None, None, None);
        for (c, name) in names.iter().enumerate().skip(1) {
            let slot = match *name {
                "rate_bps" => (&mut rate, 1.0),
                "rate_kbps" => (&mut rate, 1e3),
                "rate_mbps" => (&mut rate, 1e6),
                "delay_ms" => (&mut delay, 1.0),
                "loss" => (&mut loss, 1.0),
                _ => {
                    return Err(err(
                        Some(h + 1),
                        format!("column {}: unknown column name: {EXPECTED}", c + 1),
                    ))
                }
            };
            if slot.0.replace((c, slot.1)).is_some() {
                return Err(err(
                    Some(h + 1),
                    format!(
                        "column {}: a second column of the same quantity: {EXPECTED}",
                        c + 1
                    ),
                ));
            }
        }
        let Some((rate_col, rate_scale)) = rate else {
            return Err(err(Some(h + 1), format!("no rate column: {EXPECTED}")));
        };
        let rows = numeric_rows(text, source, h + 1)?;
        if rows.len() < 2 {
            return Err(err(None, "fewer than two rows: expected at least two (the last row holds as long as the one before it)".into()));
        }
        let mut starts_ns = Vec::with_capacity(rows.len());
        let (mut rates, mut delays, mut losses) = (Vec::new(), Vec::new(), Vec::new());
        let mut prev_time = f64::NEG_INFINITY;
        for (n, row) in &rows {
            if row.len() != names.len() {
                return Err(err(
                    Some(*n),
                    format!(
                        "{} columns: expected {}, as the header names",
                        row.len(),
                        names.len()
                    ),
                ));
            }
            if row[0] < prev_time {
                return Err(err(
                    Some(*n),
                    "its time is before the previous row's: expected non-decreasing times".into(),
                ));
            }
            prev_time = row[0];
            let t = ms_to_ns((row[0] - rows[0].1[0]) * time_scale).map_err(|m| err(Some(*n), m))?;
            starts_ns.push(t);
            let r = row[rate_col] * rate_scale;
            if !(0.0..=1e10).contains(&r) {
                return Err(err(Some(*n), "expected a rate of 0 to 10 Gbit/s".into()));
            }
            rates.push(r);
            if let Some((c, _)) = delay {
                SeriesKind::DelayMs
                    .check(row[c])
                    .map_err(|m| err(Some(*n), m))?;
                delays.push(row[c]);
            }
            if let Some((c, _)) = loss {
                SeriesKind::Loss
                    .check(row[c])
                    .map_err(|m| err(Some(*n), m))?;
                losses.push(row[c]);
            }
        }
        let period_ns = last_row_end(&starts_ns);
        let series = |values: Vec<f64>| {
            dedup_steps(Series {
                starts_ns: starts_ns.clone(),
                values,
                period_ns,
            })
            .map_err(|m| err(None, m))
        };
        let rate_series = series(rates)?;
        let capacity =
            opportunities_from_rate(&rate_series, opportunity_bytes).map_err(|m| err(None, m))?;
        Ok(CsvTrace {
            capacity,
            delay_ms: delay.map(|_| series(delays)).transpose()?,
            loss: loss.map(|_| series(losses)).transpose()?,
        })
    }
}

/// A capacity trace with the mean rate of `rate` (bit/s) in each step: whole opportunities per
/// millisecond, the fraction carried to the next.
fn opportunities_from_rate(rate: &Series, opportunity_bytes: u32) -> Result<Trace, String> {
    let period_ms = rate.period_ns.div_ceil(1_000_000).max(1);
    let ob = opportunity_bytes as f64;
    let mut offsets = Vec::new();
    let mut credit = 0.0;
    for (i, (&start, &bps)) in rate.starts_ns.iter().zip(&rate.values).enumerate() {
        let from = (start as f64 / 1e6).round() as u64;
        let to = rate
            .starts_ns
            .get(i + 1)
            .map_or(period_ms, |&s| (s as f64 / 1e6).round() as u64);
        let per_ms = bps / 8.0 * 1e-3;
        if to <= from {
            continue;
        }
        if per_ms <= 0.0 {
            continue;
        }
        // The k-th opportunity of the step falls in the first ms whose accumulated bytes reach k.
        let total = credit + per_ms * (to - from) as f64;
        let count = (total / ob).floor() as u64;
        if offsets.len() as u64 + count > MAX_CSV_OPPORTUNITIES {
            return Err(format!(
                "more than {MAX_CSV_OPPORTUNITIES} delivery opportunities per period: expected a lower rate or a shorter trace"
            ));
        }
        for k in 1..=count {
            let m = ((k as f64 * ob - credit) / per_ms).ceil().max(1.0) as u64 - 1;
            offsets.push(from + m.min(to - from - 1));
        }
        credit = total - count as f64 * ob;
    }
    if offsets.is_empty() {
        return Err(
            "the rate gives no delivery opportunity: expected a positive rate somewhere".into(),
        );
    }
    Ok(Trace::from_offsets(offsets, period_ms, opportunity_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn one_column_steps_every_interval_and_repeats() {
        let s = Series::parse(
            "20\n80\n# note\n40\n",
            "d",
            SeriesKind::DelayMs,
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(s.period(), Duration::from_millis(30));
        let at: Vec<f64> = [0, 9, 10, 25, 30, 41]
            .iter()
            .map(|&m| s.at(m * MS))
            .collect();
        assert_eq!(at, [20.0, 20.0, 80.0, 40.0, 20.0, 80.0]);
    }

    #[test]
    fn two_columns_hold_until_the_next_row_and_the_last_as_long_as_the_one_before() {
        // Times relative to the first row; the last row holds 3000 ms (as the one before).
        let s = Series::parse(
            "1000 20\n5000, 80\n8000\t50\n",
            "d",
            SeriesKind::DelayMs,
            Duration::from_millis(10),
        )
        .unwrap();
        assert_eq!(s.period(), Duration::from_millis(10_000));
        let at: Vec<f64> = [0, 3999, 4000, 6999, 7000, 9999, 10_000]
            .iter()
            .map(|&m| s.at(m * MS))
            .collect();
        assert_eq!(at, [20.0, 20.0, 80.0, 80.0, 50.0, 50.0, 20.0]);
    }

    #[test]
    fn bad_series_name_the_line_and_what_was_expected() {
        let d = Duration::from_millis(10);
        let e = Series::parse("1\n2\nx\n", "a", SeriesKind::DelayMs, d).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().starts_with("a:3: not a number"), "{e}");
        let e = Series::parse("0 0.1\n10 1.5\n", "l", SeriesKind::Loss, d).unwrap_err();
        assert_eq!((e.line, e.message.contains("probability")), (Some(2), true));
        let e = Series::parse("0 1\n10 2 3\n", "l", SeriesKind::DelayMs, d).unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = Series::parse("10 1\n5 2\n", "l", SeriesKind::DelayMs, d).unwrap_err();
        assert!(e.message.contains("non-decreasing"), "{e}");
        assert!(Series::parse("# only\n", "e", SeriesKind::DelayMs, d)
            .unwrap_err()
            .message
            .contains("empty"));
        assert!(Series::parse("-1\n", "n", SeriesKind::DelayMs, d).is_err());
    }

    #[test]
    fn csv_gives_capacity_delay_and_loss() {
        let t = CsvTrace::parse(
            "# measured\ntime_s,rate_mbps,delay_ms,loss\n0,12,20,0\n1,6,80,0.5\n",
            "m.csv",
            1500,
        )
        .unwrap();
        // 12 Mbit/s = one 1500-B opportunity per ms, then 6 Mbit/s = one per 2 ms.
        assert_eq!(t.capacity.period(), Duration::from_millis(2000));
        assert_eq!(t.capacity.opportunities(), 1000 + 500);
        assert!((t.capacity.mean_rate_bps() - 9e6).abs() < 1.0);
        let d = t.delay_ms.unwrap();
        assert_eq!((d.at(999 * MS), d.at(1000 * MS)), (20.0, 80.0));
        assert_eq!(t.loss.unwrap().at(1500 * MS), 0.5);
        // Without delay and loss columns, rate in kbit/s, time in ms.
        let t = CsvTrace::parse("time_ms rate_kbps\n0 1200\n10 1200\n", "k.csv", 1500).unwrap();
        assert_eq!(
            (t.capacity.opportunities(), t.delay_ms, t.loss),
            (2, None, None)
        );
    }

    #[test]
    fn csv_rates_below_one_opportunity_per_ms_carry_their_fraction() {
        // 4 Mbit/s = 500 B/ms: an opportunity every 3 ms (at the 3rd, 6th, ... ms).
        let t = CsvTrace::parse("time_ms,rate_mbps\n0,4\n30,4\n", "c", 1500).unwrap();
        assert_eq!(t.capacity.opportunities(), 20);
        assert!((t.capacity.mean_rate_bps() - 4e6).abs() < 1.0);
    }

    #[test]
    fn bad_csv_is_refused_with_the_line() {
        let e = CsvTrace::parse("rate_mbps,time_s\n1,0\n", "c", 1500).unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = CsvTrace::parse("time_s,delay_ms\n0,1\n1,1\n", "c", 1500).unwrap_err();
        assert!(e.message.contains("no rate column"), "{e}");
        let e = CsvTrace::parse("time_s,rate_mbps,jitter\n0,1,1\n", "c", 1500).unwrap_err();
        assert!(e.message.contains("column 3: unknown"), "{e}");
        let e = CsvTrace::parse("time_s,rate_mbps\n1,1\n0,1\n", "c", 1500).unwrap_err();
        assert_eq!(
            (e.line, e.message.contains("non-decreasing")),
            (Some(3), true)
        );
        let e = CsvTrace::parse("time_s,rate_mbps\n0,1\n1,x\n", "c", 1500).unwrap_err();
        assert_eq!(e.line, Some(3));
        let e = CsvTrace::parse("time_s,rate_mbps\n0,0\n1,0\n", "c", 1500).unwrap_err();
        assert!(e.message.contains("no delivery opportunity"), "{e}");
        assert!(CsvTrace::parse("time_s,rate_mbps\n0,1\n", "c", 1500).is_err());
    }
}
