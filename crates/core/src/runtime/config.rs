//! Start-up configuration shared by the functions: the table name from
//! `TABLE_NAME` and a DynamoDB client from the SDK's standard configuration
//! (region, credentials, `AWS_ENDPOINT_URL_DYNAMODB`, retry settings) with
//! the trust roots of [`crate::runtime::tls`].

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_sdk_dynamodb::config::ProvideCredentials;

use crate::store::Store;

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

/// Builds the store from the process environment: `TABLE_NAME` plus the
/// SDK's standard configuration chain and the process's trust roots; sets how long change history is
/// kept from `HISTORY_RETENTION_DAYS`.
pub async fn store_from_env() -> Result<Store, ConfigError> {
    let lookup = |k: &str| std::env::var(k).ok();
    let table = required(lookup, TABLE_NAME)?;
    crate::store::history::set_retention_days(days(lookup, HISTORY_RETENTION_DAYS)?);
    crate::runtime::tls::check(lookup)?;
    let sdk = sdk_config().await;
    Ok(Store::new(
        crate::runtime::metrics::dynamodb_client(&sdk),
        table,
    ))
}

/// The functions' SDK configuration: the SDK's standard chain (region,
/// credentials, `AWS_ENDPOINT_URL_DYNAMODB`, retry settings) with an HTTPS
/// client trusting [`crate::runtime::tls::TrustRoots::global`].
///
/// When the environment holds credentials, as Lambda's always does (the
/// function role's session), they are taken from it directly: the standard
/// chain tries the environment first and would choose the same ones, but
/// building the chain's other providers (profile files, SSO, web identity
/// with its STS endpoint rules, the container and instance metadata
/// clients) costs a cold start about 1.5 ms of CPU (`make bench`).
pub async fn sdk_config() -> aws_config::SdkConfig {
    let loader = aws_config::from_env()
        .http_client(crate::runtime::tls::TrustRoots::global().sdk_http_client());
    let environment = EnvironmentVariableCredentialsProvider::new();
    // Asking the provider itself (it reads variables, no I/O) keeps its
    // rule, blank values and fallback names included, in one place.
    let loader = if environment.provide_credentials().await.is_ok() {
        loader.credentials_provider(environment)
    } else {
        loader
    };
    loader.load().await
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
