//! Start-up configuration shared by the functions: the table name from
//! `TABLE_NAME` and a DynamoDB client from the SDK's standard configuration
//! (region, credentials, `AWS_ENDPOINT_URL_DYNAMODB`, retry settings).

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

/// Builds the store from the process environment: `TABLE_NAME` plus the
/// SDK's standard configuration chain.
pub async fn store_from_env() -> Result<Store, ConfigError> {
    let table = required(|k| std::env::var(k).ok(), TABLE_NAME)?;
    let sdk = aws_config::load_from_env().await;
    Ok(Store::new(aws_sdk_dynamodb::Client::new(&sdk), table))
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
    }
}
