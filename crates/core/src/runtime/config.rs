//! Start-up configuration shared by the functions: how a missing or
//! malformed variable is reported (`ConfigError`, naming it), and the
//! variables every function reads.

/// A required setting that is missing or malformed. Start-up fails with it,
/// naming the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration: {var}: {reason}")]
pub struct ConfigError {
    pub var: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(var: &str, reason: impl Into<String>) -> Self {
        Self {
            var: var.to_string(),
            reason: reason.into(),
        }
    }
}

/// The environment variable holding the table name.
pub const TABLE_NAME: &str = "TABLE_NAME";

/// Reads a required, non-empty variable through `lookup` (the process
/// environment in binaries, a map in tests).
pub fn required(lookup: impl Fn(&str) -> Option<String>, var: &str) -> Result<String, ConfigError> {
    match lookup(var) {
        None => Err(ConfigError::new(var, "is not set")),
        Some(v) if v.trim().is_empty() => Err(ConfigError::new(var, "is empty")),
        Some(v) => Ok(v),
    }
}

/// The environment variable holding how many days change history is kept
/// (0 or unset: forever).
pub const HISTORY_RETENTION_DAYS: &str = "HISTORY_RETENTION_DAYS";

/// Reads an optional whole number of days.
pub fn days(
    lookup: impl Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<u64>, ConfigError> {
    match lookup(var) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map(|d| Some(d).filter(|d| *d > 0))
            .map_err(|_| ConfigError::new(var, "must be a whole number of days")),
    }
}

/// The variable naming how often each authorizer instance reads the
/// revocations item (the authorizer's check, recompute's flush delay).
pub const REVOCATION_CHECK_SECONDS: &str = "REVOCATION_CHECK_SECONDS";

/// `REVOCATION_CHECK_SECONDS`, 1 to 5, default 1: the one reading the
/// authorizer and recompute share. At most half the revoking-write
/// window: one tenant's revoking writes between two checks then fill at
/// most [`crate::store::TENANT_REVOKING_WRITES_PER_WINDOW`] of the entries
/// an instance reads.
pub fn revocation_check(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<std::time::Duration, ConfigError> {
    seconds(lookup, REVOCATION_CHECK_SECONDS, 1, 1..=5)
}

/// A whole number of seconds in `range` from `var`; `default` when unset
/// or blank.
pub fn seconds(
    lookup: impl Fn(&str) -> Option<String>,
    var: &str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
) -> Result<std::time::Duration, ConfigError> {
    match lookup(var).filter(|v| !v.trim().is_empty()) {
        None => Ok(std::time::Duration::from_secs(default)),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(s) if range.contains(&s) => Ok(std::time::Duration::from_secs(s)),
            _ => Err(ConfigError::new(
                var,
                format!(
                    "must be a whole number of seconds from {} to {}",
                    range.start(),
                    range.end()
                ),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_variables_are_named() {
        let none = |_: &str| None;
        let empty = |_: &str| Some("  ".to_string());
        assert_eq!(
            required(none, TABLE_NAME).unwrap_err().to_string(),
            "configuration: TABLE_NAME: is not set"
        );
        assert_eq!(required(empty, TABLE_NAME).unwrap_err().reason, "is empty");
        assert_eq!(required(|_| Some("t".into()), TABLE_NAME).unwrap(), "t");
        assert_eq!(days(none, HISTORY_RETENTION_DAYS).unwrap(), None);
        assert_eq!(
            days(|_| Some("0".into()), HISTORY_RETENTION_DAYS).unwrap(),
            None
        );
        assert_eq!(
            days(|_| Some("90".into()), HISTORY_RETENTION_DAYS).unwrap(),
            Some(90)
        );
        assert_eq!(
            days(|_| Some("a year".into()), HISTORY_RETENTION_DAYS)
                .unwrap_err()
                .var,
            HISTORY_RETENTION_DAYS
        );
    }
}
