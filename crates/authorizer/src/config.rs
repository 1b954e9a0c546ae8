//! The authorizer's configuration, read once at start-up. A missing or
//! malformed required variable fails start-up with the variable named.

use std::time::Duration;

use authz_core::runtime::config::{required, revocation_check, seconds, ConfigError, TABLE_NAME};

use crate::issuers::{IssuerProfile, TRUSTED_ISSUERS};

/// Everything the authorizer reads from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub table_name: String,
    /// The trusted issuers: `TRUSTED_ISSUERS`, and the one the
    /// single-issuer settings (`JWT_ISSUER`, `JWT_AUDIENCE`, `JWKS_URL`,
    /// `USER_ID_CLAIM`) describe, if set.
    pub issuers: Vec<IssuerProfile>,
    /// A JWKS document to start with, so the first request needs no fetch:
    /// the first issuer's (the single-issuer settings', when set).
    pub initial_jwks: Option<String>,
    /// How long a fetched key set is used before it is fetched again on use
    /// (`JWKS_MAX_AGE_SECONDS`, 60 to 86400, default 300): the bound on how
    /// long a key the issuer withdraws is still accepted.
    pub jwks_max_age: Duration,
    /// Path of the route rules JSON.
    pub routes_file: String,
    /// How long decision inputs are cached per (tenant, user); zero disables.
    pub cache_ttl: Duration,
    /// The request header carrying `Bearer <JWT>` (API Gateway's identity
    /// source; `Authorization` unless the template says otherwise).
    pub token_header: String,
    /// How often the Cedar policy set is reloaded (`POLICY_REFRESH_SECONDS`,
    /// 1 to 3600, default 60).
    pub policy_refresh: Duration,
    /// How often the revocations item is read (`REVOCATION_CHECK_SECONDS`,
    /// 1 to 5, default 1): how soon a revocation reaches the instance's
    /// caches.
    pub revocation_check: Duration,
    /// About how many bytes of tenants' compiled policy sets an instance
    /// keeps (`TENANT_POLICY_CACHE_MB`, 1 to 1024, default 64): the least
    /// recently used let go past it, and nothing else holds them.
    pub tenant_policy_cache_bytes: u64,
    /// How API Gateway caches answers (`AUTHORIZER_RESULT_TTL`,
    /// `CACHE_KEY_ON_SOURCE_IP`).
    pub answer_caching: authz_core::policy::cedar::AnswerCaching,
}

impl Config {
    /// Reads the configuration through `lookup` (the process environment in
    /// the binary, a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table_name = required(&lookup, TABLE_NAME)?;
        let mut issuers = match lookup(TRUSTED_ISSUERS).filter(|v| !v.trim().is_empty()) {
            Some(json) => crate::issuers::parse(&json)?,
            None => Vec::new(),
        };
        if let Some(issuer) = lookup("JWT_ISSUER").filter(|v| !v.trim().is_empty()) {
            // As for `TRUSTED_ISSUERS`: https://, or http:// on loopback.
            crate::issuers::check_url("JWT_ISSUER", &issuer)?;
            let audiences: Vec<String> = required(&lookup, "JWT_AUDIENCE")?
                .split(',')
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect();
            if audiences.is_empty() {
                return Err(ConfigError::new("JWT_AUDIENCE", "lists no audience"));
            }
            let jwks_url = match lookup("JWKS_URL").filter(|v| !v.trim().is_empty()) {
                Some(url) => url,
                None => crate::issuers::default_jwks_url(&issuer),
            };
            // As for `TRUSTED_ISSUERS`: https://, or http:// on loopback.
            crate::issuers::check_url("JWKS_URL", &jwks_url)?;
            let user_id_claim = lookup("USER_ID_CLAIM")
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| "sub".to_string());
            if issuers.iter().any(|p| p.issuer == issuer) {
                return Err(ConfigError::new(
                    "JWT_ISSUER",
                    format!("is also in {TRUSTED_ISSUERS}: list it once"),
                ));
            }
            // First: `JWKS_JSON`, if set, is its key set.
            issuers.insert(
                0,
                crate::issuers::single(issuer, audiences, jwks_url, user_id_claim),
            );
        }
        if issuers.is_empty() {
            return Err(ConfigError::new(
                TRUSTED_ISSUERS,
                "is not set, nor is JWT_ISSUER: trust at least one issuer",
            ));
        }
        authz_core::runtime::tls::check(&lookup)?;
        let routes_file = required(&lookup, "ROUTES_FILE")?;
        let cache_ttl = seconds(&lookup, "CACHE_TTL_SECONDS", 60, 0..=3600)?;
        let policy_refresh = seconds(&lookup, "POLICY_REFRESH_SECONDS", 60, 1..=3600)?;
        let jwks_max_age = seconds(
            &lookup,
            "JWKS_MAX_AGE_SECONDS",
            crate::jwks::DEFAULT_MAX_AGE.as_secs(),
            60..=86_400,
        )?;
        let revocation_check = revocation_check(&lookup)?;
        let tenant_policy_cache_bytes =
            match lookup("TENANT_POLICY_CACHE_MB").filter(|v| !v.trim().is_empty()) {
                None => authz_core::store::TENANT_SETS_BYTES,
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|mb| (1..=1024).contains(mb))
                    .map(|mb| mb << 20)
                    .ok_or_else(|| {
                        ConfigError::new(
                            "TENANT_POLICY_CACHE_MB",
                            "must be a whole number from 1 to 1024",
                        )
                    })?,
            };
        let token_header = lookup("TOKEN_HEADER")
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "Authorization".to_string());
        if hyper::header::HeaderName::from_bytes(token_header.as_bytes()).is_err() {
            return Err(ConfigError::new(
                "TOKEN_HEADER",
                "is not a valid header name",
            ));
        }
        Ok(Self {
            table_name,
            issuers,
            initial_jwks: lookup("JWKS_JSON").filter(|v| !v.trim().is_empty()),
            jwks_max_age,
            routes_file,
            cache_ttl,
            token_header,
            policy_refresh,
            revocation_check,
            tenant_policy_cache_bytes,
            answer_caching: authz_core::policy::cedar::AnswerCaching::from_lookup(&lookup)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const BASE: &[(&str, &str)] = &[
        ("TABLE_NAME", "t"),
        ("JWT_ISSUER", "https://issuer.example.com/"),
        ("JWT_AUDIENCE", "a, b"),
        ("ROUTES_FILE", "routes.json"),
    ];

    #[test]
    fn defaults_and_lists() {
        let c = Config::from_lookup(env(BASE)).unwrap();
        assert_eq!(c.issuers.len(), 1);
        assert_eq!(c.issuers[0].audiences, ["a", "b"]);
        assert_eq!(
            c.issuers[0].keys,
            crate::issuers::KeysAt::Jwks("https://issuer.example.com/.well-known/jwks.json".into())
        );
        assert_eq!(
            c.issuers[0].user,
            crate::issuers::UserBy::Claim("sub".into())
        );
        assert_eq!(c.cache_ttl, Duration::from_secs(60));
        assert_eq!(c.token_header, "Authorization");
        assert_eq!(c.policy_refresh, Duration::from_secs(60));
        assert_eq!(c.jwks_max_age, Duration::from_secs(300));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (var, value) in [
            ("JWT_AUDIENCE", " , "),
            ("JWKS_URL", "ftp://keys"),
            ("JWKS_URL", "http://keys.example.com/jwks.json"),
            ("JWKS_URL", "http://127.0.0.1.example.com/jwks.json"),
            ("JWT_ISSUER", "http://issuer.example.com/"),
            ("JWT_ISSUER", "issuer.example.com"),
            ("CACHE_TTL_SECONDS", "-1"),
            ("CACHE_TTL_SECONDS", "soon"),
            ("TOKEN_HEADER", "X Token"),
            ("POLICY_REFRESH_SECONDS", "0"),
            ("TENANT_POLICY_CACHE_MB", "0"),
            ("JWKS_MAX_AGE_SECONDS", "59"),
            ("CACHE_KEY_ON_SOURCE_IP", "yes"),
            ("AUTHORIZER_RESULT_TTL", "soon"),
        ] {
            let mut pairs = BASE.to_vec();
            pairs.push((var, value));
            assert_eq!(
                Config::from_lookup(env(&pairs)).unwrap_err().var,
                var,
                "{var}={value}"
            );
        }
        for missing in ["TABLE_NAME", "JWT_AUDIENCE", "ROUTES_FILE"] {
            let pairs: Vec<_> = BASE
                .iter()
                .copied()
                .filter(|(k, _)| *k != missing)
                .collect();
            assert_eq!(Config::from_lookup(env(&pairs)).unwrap_err().var, missing);
        }
    }
}
