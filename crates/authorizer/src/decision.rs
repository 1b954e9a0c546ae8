//! The decision: authenticate, find the route rule, read the caller's user
//! (and grant, on a tenant route) in one DynamoDB request, and allow only an
//! active user whose permissions grant the rule's permission.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use moka::sync::Cache;

use authz_core::items::{Entity, TenantGrant, User};
use authz_core::keys::{self, attr, PrimaryKey};
use authz_core::values::{Permission, TenantGrantId, TenantId, UserId, UserStatus};
use authz_core::{Error, Store};

use crate::jwks::JwksSource;
use crate::policy::{allowed_resources, Holdings, MethodArn};
use crate::routes::{RouteRules, TENANT_PARAM};
use crate::token::{AuthError, Identity, Verifier};

/// What the table says about a caller, cached per (tenant, user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub user: Option<User>,
    pub grant: Option<TenantGrant>,
}

/// A request to decide, independent of the event shape it came in.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub authorization: Option<&'a str>,
    pub method: &'a str,
    /// The route's resource template (REST `resource`, HTTP API route path).
    pub resource: &'a str,
    pub path_parameters: &'a HashMap<String, String>,
    /// The ARN of the request (REST `methodArn`, HTTP API `routeArn`).
    pub method_arn: &'a str,
}

/// An Allow and what the backend is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    pub user_id: UserId,
    pub tenant_id: Option<TenantId>,
    pub tenant_grant_id: Option<TenantGrantId>,
    pub roles: Vec<String>,
    pub permissions: Vec<Permission>,
    /// Resources the IAM policy allows.
    pub resources: Vec<String>,
}

/// The answer for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow(Box<Allow>),
    /// Authenticated, not permitted: an explicit Deny (403).
    Deny {
        user_id: UserId,
        tenant_id: Option<TenantId>,
        reason: &'static str,
    },
}

/// Why no decision was made.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// 401: answered with the error `Unauthorized`.
    #[error("Unauthorized")]
    Unauthorized(String),
    /// A dependency failed (DynamoDB, JWKS): an error, so API Gateway
    /// answers 500 and caches nothing. Never a Deny, never an Allow.
    #[error("authorizer dependency failed: {0}")]
    Dependency(String),
}

/// Facts about a decision for its log line.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub token_cached: bool,
    pub inputs_cached: bool,
    pub route: Option<String>,
}

/// The authorizer: verifier, rules, store and the decision-input cache.
pub struct Authorizer<S> {
    verifier: Verifier<S>,
    rules: RouteRules,
    store: Store,
    inputs: Option<InputCache>,
}

/// Decision inputs by (tenant of a tenant route, user).
type InputCache = Cache<(Option<TenantId>, UserId), Arc<Inputs>>;

/// Most (tenant, user) decision inputs kept per Lambda instance.
const INPUT_CACHE_ENTRIES: u64 = 10_000;

impl<S: JwksSource> Authorizer<S> {
    /// `cache_ttl` zero disables the decision-input cache.
    pub fn new(
        verifier: Verifier<S>,
        rules: RouteRules,
        store: Store,
        cache_ttl: Duration,
    ) -> Self {
        let inputs = (!cache_ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(INPUT_CACHE_ENTRIES)
                .time_to_live(cache_ttl)
                .build()
        });
        Self {
            verifier,
            rules,
            store,
            inputs,
        }
    }

    pub fn verifier(&self) -> &Verifier<S> {
        &self.verifier
    }

    pub fn rules(&self) -> &RouteRules {
        &self.rules
    }

    /// Decides a request.
    pub async fn decide(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<Decision, Failure> {
        let token = request
            .authorization
            .and_then(crate::token::bearer)
            .ok_or_else(|| Failure::Unauthorized("no bearer token".into()))?;
        let identity: Arc<Identity> = match self.verifier.verify(token).await {
            Ok((identity, cached)) => {
                trace.token_cached = cached;
                identity
            }
            Err(AuthError::Unauthenticated(reason)) => return Err(Failure::Unauthorized(reason)),
            Err(AuthError::Jwks(e)) => return Err(Failure::Dependency(e.to_string())),
        };
        let user_id = identity.user_id;
        let deny = |tenant_id, reason| {
            Ok(Decision::Deny {
                user_id,
                tenant_id,
                reason,
            })
        };

        let Some(rule) = self.rules.find(request.method, request.resource) else {
            return deny(None, "no route rule");
        };
        trace.route = Some(format!("{} {}", rule.method, rule.resource));
        let Some(method_arn) = MethodArn::parse(request.method_arn) else {
            return deny(None, "malformed method ARN");
        };
        let tenant_id = if rule.is_tenant_scoped() {
            match request
                .path_parameters
                .get(TENANT_PARAM)
                .map(|t| TenantId::parse(t))
            {
                Some(Ok(t)) => Some(t),
                _ => return deny(None, "tenant id missing or malformed"),
            }
        } else {
            None
        };

        let (inputs, cached) = self.inputs(tenant_id, user_id).await?;
        trace.inputs_cached = cached;
        let Some(user) = &inputs.user else {
            return deny(tenant_id, "unknown user");
        };
        if user.status != UserStatus::Active {
            return deny(tenant_id, "user not active");
        }
        let no_permissions: Vec<Permission> = Vec::new();
        let holdings = Holdings {
            tenant: tenant_id.as_ref(),
            tenant_permissions: inputs
                .grant
                .as_ref()
                .map_or(&no_permissions, |g| &g.effective_permissions),
            global_permissions: &user.effective_permissions,
        };
        if !holdings.allows(rule) {
            return deny(tenant_id, "permission not granted");
        }
        let mut permissions: Vec<Permission> = holdings
            .tenant_permissions
            .iter()
            .chain(holdings.global_permissions)
            .cloned()
            .collect();
        permissions.sort();
        permissions.dedup();
        let roles = inputs
            .grant
            .iter()
            .flat_map(|g| g.roles.iter())
            .chain(&user.roles)
            .map(|r| r.to_string())
            .collect();
        Ok(Decision::Allow(Box::new(Allow {
            user_id,
            tenant_id,
            tenant_grant_id: inputs.grant.as_ref().map(|g| g.tenant_grant_id),
            roles,
            permissions,
            resources: allowed_resources(&self.rules, &holdings, &method_arn),
        })))
    }

    async fn inputs(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> Result<(Arc<Inputs>, bool), Failure> {
        if let Some(cache) = &self.inputs {
            if let Some(hit) = cache.get(&(tenant, user)) {
                return Ok((hit, true));
            }
        }
        let read = Arc::new(
            self.read(tenant, user)
                .await
                .map_err(|e| Failure::Dependency(e.to_string()))?,
        );
        if let Some(cache) = &self.inputs {
            cache.insert((tenant, user), read.clone());
        }
        Ok((read, false))
    }

    /// One request: GetItem of the user on a global route, BatchGetItem of
    /// the grant and the user on a tenant route (eventually consistent:
    /// half the read cost; see the README on staleness).
    async fn read(&self, tenant: Option<TenantId>, user_id: UserId) -> Result<Inputs, Error> {
        let user_key = keys::user(&user_id);
        let Some(tenant_id) = tenant else {
            return Ok(Inputs {
                user: self.store.get::<User>(&user_key, false).await?,
                grant: None,
            });
        };
        let grant_key = keys::tenant_grant(&tenant_id, &user_id);
        let key_map = |k: &PrimaryKey| {
            HashMap::from([
                (attr::PK.to_string(), AttributeValue::S(k.pk.clone())),
                (attr::SK.to_string(), AttributeValue::S(k.sk.clone())),
            ])
        };
        let mut pending = Some(
            KeysAndAttributes::builder()
                .keys(key_map(&grant_key))
                .keys(key_map(&user_key))
                .build()
                .map_err(|e| Error::internal(e.to_string()))?,
        );
        let mut inputs = Inputs {
            user: None,
            grant: None,
        };
        let started = Instant::now();
        // Unprocessed keys only appear under throttling; retry them briefly.
        while let Some(keys) = pending.take() {
            let out = self
                .store
                .client()
                .batch_get_item()
                .request_items(self.store.table(), keys)
                .send()
                .await
                .map_err(|e| authz_core::error::classify("BatchGetItem", e))?;
            for item in out.responses.unwrap_or_default().into_values().flatten() {
                match item
                    .get(attr::TYPE)
                    .and_then(|t| t.as_s().ok())
                    .map(String::as_str)
                {
                    Some("User") => inputs.user = Some(User::from_item(item)?),
                    Some("TenantGrant") => inputs.grant = Some(TenantGrant::from_item(item)?),
                    other => {
                        return Err(Error::internal(format!("unexpected item type {other:?}")))
                    }
                }
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(self.store.table()))
                .filter(|k| !k.keys().is_empty());
            if pending.is_some() && started.elapsed() > Duration::from_secs(1) {
                return Err(Error::retryable(
                    "BatchGetItem kept returning unprocessed keys",
                ));
            }
        }
        Ok(inputs)
    }
}
