//! The one wall clock: the current time as the table and the answers hold
//! it (RFC 3339 text, seconds or milliseconds since the epoch), as a
//! `SystemTime` for deadlines, and the conversions between them. Nothing
//! else reads `SystemTime::now()`. (`Instant`, the monotonic clock, is
//! for how long something takes, never for an instant anyone stores.)

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The current time as RFC 3339 (UTC, second precision or finer): what
/// `createdAt`, `updatedAt` and `modifiedAt` hold.
pub fn now() -> String {
    aws_smithy_types::DateTime::from(SystemTime::now())
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .expect("the system clock is within RFC 3339's range")
}

/// The current time in seconds since the epoch: what `expiresAt` (the
/// table's TTL attribute), grants' ends and tokens' `exp` hold.
pub fn now_seconds() -> u64 {
    epoch_seconds(SystemTime::now())
}

/// The current time in milliseconds since the epoch: what a revocation's
/// `at` and a reader's clock are compared in.
pub fn now_millis() -> u64 {
    since_epoch(SystemTime::now()).as_millis() as u64
}

/// The current time as a `SystemTime`: what a deadline (an invocation's,
/// a budget's end) is compared with.
pub fn system_now() -> SystemTime {
    SystemTime::now()
}

/// How long after the epoch it is now.
pub fn now_since_epoch() -> Duration {
    since_epoch(SystemTime::now())
}

/// How long after the epoch `t` is (zero before it).
pub fn since_epoch(t: SystemTime) -> Duration {
    t.duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// `t` in seconds since the epoch.
pub fn epoch_seconds(t: SystemTime) -> u64 {
    since_epoch(t).as_secs()
}

/// Seconds since the epoch as RFC 3339 (UTC).
pub fn rfc3339(epoch_seconds: u64) -> String {
    rfc3339_signed(epoch_seconds.try_into().unwrap_or(i64::MAX)).unwrap_or_default()
}

/// Seconds since the epoch (before it: negative) as RFC 3339 (UTC), or
/// `None` past what the format can hold.
pub fn rfc3339_signed(epoch_seconds: i64) -> Option<String> {
    aws_smithy_types::DateTime::from_secs(epoch_seconds)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .ok()
}

/// An RFC 3339 date-time with any offset, as milliseconds since the epoch
/// (before it: negative), or `None` if the text is not one.
pub fn parse_rfc3339_millis(text: &str) -> Option<i64> {
    use time::format_description::well_known::Rfc3339;
    let parsed = time::OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(parsed.unix_timestamp_nanos() / 1_000_000).ok()
}

/// `yyyy-mm` of `millis` since the epoch, and the month `back` months
/// before it.
pub fn month(millis: u64, back: i32) -> String {
    use time::OffsetDateTime;
    let at = OffsetDateTime::from_unix_timestamp((millis / 1000) as i64)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let months = at.year() * 12 + (at.month() as i32 - 1) - back;
    format!(
        "{:04}-{:02}",
        months.div_euclid(12),
        months.rem_euclid(12) + 1
    )
}
