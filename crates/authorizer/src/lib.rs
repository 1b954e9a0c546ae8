//! The API Gateway REQUEST authorizer: verifies the caller's JWT against the
//! issuer's JWKS, finds the route rule, reads the caller's grant and user in
//! one DynamoDB request, and answers with an IAM policy that stays right when
//! API Gateway caches it.

mod answer;
mod authorizer;
pub mod config;
pub mod decision;
pub mod deferred;
pub mod directory;
pub mod event;
pub mod handler;
pub mod iam_policy;
mod inputs;
pub mod issuers;
mod judge;
pub mod jwks;
pub mod response;
pub mod revocations;
pub mod routes;
pub mod token;

pub use authorizer::{Authorizer, DEFAULT_ANSWER_CACHING, DEFAULT_POLICY_REFRESH};
pub use decision::{Decision, Failure};

use std::sync::Arc;

use crate::deferred::Deferred;
use authz_core::Store;

use crate::config::Config;
use crate::jwks::{HttpJwks, KeyStore};
use crate::routes::RouteRules;
use crate::token::{TrustedIssuer, Verifier};

/// Builds the authorizer from its configuration and a store (ready, or
/// still being built): loads the route rules (failing on an invalid file)
/// and sets up the JWKS source, which fetches nothing until it must.
pub fn build(
    config: &Config,
    store: impl Into<Deferred<Store>>,
) -> Result<Authorizer<HttpJwks>, Box<dyn std::error::Error + Send + Sync>> {
    let rules = RouteRules::load(&config.routes_file)?;
    let mut issuers = Vec::with_capacity(config.issuers.len());
    for (i, profile) in config.issuers.iter().enumerate() {
        let source = HttpJwks::for_issuer(profile)?;
        let initial = (i == 0).then_some(config.initial_jwks.as_deref()).flatten();
        let keys: Arc<KeyStore<HttpJwks>> =
            KeyStore::with_max_age(source, initial, config.jwks_max_age)
                .map_err(|e| format!("JWKS_JSON: {e}"))?;
        issuers.push(TrustedIssuer {
            profile: profile.clone(),
            keys,
        });
    }
    let verifier = Verifier::with_issuers(issuers);
    Ok(Authorizer::new(verifier, rules, store, config.cache_ttl)
        .with_token_header(&config.token_header)
        .with_policies(config.policy_refresh, config.answer_caching)
        .with_tenant_policy_memory(config.tenant_policy_cache_bytes)
        .with_revocation_check(config.revocation_check))
}
