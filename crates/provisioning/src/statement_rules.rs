//! What a Cedar statement must pass before it is stored: Cedar's syntax
//! and the deployment's schema (`CEDAR_SCHEMA_FILE`, actions from
//! `ROUTES_FILE`), API Gateway's answer caching (`AUTHORIZER_RESULT_TTL`,
//! `CACHE_KEY_ON_SOURCE_IP`), and the caller's ceiling: a `permit` gives
//! the actions it names, which the caller must hold.

use std::sync::Arc;

use authz_core::model::values::{Permission, PolicyId};
use authz_core::policy::cedar::{AnswerCaching, Checked, KnownPermission, PolicySchema};
use authz_core::runtime::config::{required, ConfigError};
use authz_core::Error;

use crate::error::ApiError;
use crate::extract::Actor;

/// The schema and the cache settings statements are checked against.
#[derive(Debug, Clone)]
pub struct StatementRules {
    schema: Arc<PolicySchema>,
    caching: AnswerCaching,
}

impl StatementRules {
    pub fn new(schema: PolicySchema, caching: AnswerCaching) -> Self {
        Self {
            schema: Arc::new(schema),
            caching,
        }
    }

    /// From the schema file, the route-rules file and the cache settings.
    pub fn load(
        schema_file: &str,
        routes_file: &str,
        caching: AnswerCaching,
    ) -> Result<Self, String> {
        Ok(Self::new(
            PolicySchema::load(schema_file, routes_file)?,
            caching,
        ))
    }

    /// From the environment (`lookup`): `CEDAR_SCHEMA_FILE` and
    /// `ROUTES_FILE` (required), `AUTHORIZER_RESULT_TTL` (seconds, default
    /// 300 as in the template) and `CACHE_KEY_ON_SOURCE_IP` (`true` or
    /// `false`, default `false`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let schema_file = required(&lookup, "CEDAR_SCHEMA_FILE")?;
        let routes_file = required(&lookup, "ROUTES_FILE")?;
        let caching = AnswerCaching::from_lookup(&lookup)?;
        Self::load(&schema_file, &routes_file, caching)
            .map_err(|reason| ConfigError::new("CEDAR_SCHEMA_FILE", reason))
    }

    /// How API Gateway caches the authorizer's answers.
    pub fn caching(&self) -> AnswerCaching {
        self.caching
    }

    /// Whether `action` is an action of the schema (a route rule's
    /// permission).
    pub fn knows_action(&self, action: &str) -> bool {
        self.schema.knows_action(action)
    }

    /// Whether a route decides `action` in a tenant (`in_tenant`) or on
    /// the platform.
    pub fn decided_where(&self, action: &str, in_tenant: bool) -> bool {
        self.schema.decided_where(action, in_tenant)
    }

    /// Every permission the deployment knows (its route rules' and so its
    /// Cedar actions), with the routes that need it.
    pub fn known_permissions(&self) -> impl Iterator<Item = KnownPermission<'_>> {
        self.schema.known_permissions()
    }

    /// A 400 naming the first of `permissions` (a role's, beside those in
    /// `held`, which it has already) that gives nothing this deployment
    /// knows (`membr:read`), with the nearest known one: a role holding it
    /// would give nothing, silently.
    pub fn known_to_roles(
        &self,
        permissions: &[Permission],
        held: &[Permission],
    ) -> Result<(), ApiError> {
        for (i, permission) in permissions.iter().enumerate() {
            if held.contains(permission) {
                continue;
            }
            if let Err(nearest) = self.schema.covers_something(permission.as_str()) {
                let hint = nearest.map_or_else(
                    || " (GET /permissions lists them)".to_string(),
                    |n| format!(": did you mean {n}? (GET /permissions lists them)"),
                );
                return Err(ApiError::invalid(
                    format!("permissions[{i}]"),
                    format!("{permission} is not one of this deployment's permissions{hint}"),
                ));
            }
        }
        Ok(())
    }

    /// Checks `statement` for policy `id` written by `actor`: a 400 naming
    /// the line, column and Cedar's message, or the attribute the cache
    /// does not key on; a 409 for the lock-out shape; a 403 naming a permission a `permit` would give
    /// that the caller does not hold (in the tenant it is confined to, or
    /// globally).
    pub fn admit(
        &self,
        id: &PolicyId,
        statement: &str,
        actor: &Actor,
    ) -> Result<Checked, ApiError> {
        let invalid = |reason: String| {
            ApiError::Core(Error::Invalid {
                field: "statement".into(),
                reason,
            })
        };
        let checked = self
            .schema
            .check(id, statement)
            .map_err(|e| invalid(e.to_string()))?;
        self.caching.admits(checked.reads).map_err(invalid)?;
        if checked.locks_out {
            return Err(ApiError::Core(Error::state_conflict(
                "statement",
                "this forbid stops every caller on every resource from every action outside policy:*, with no condition that can be false: stored, it would lock every administrator out. Confine it (a principal, a resource, some actions) or give it a real condition; to undo one already stored, see break glass in docs/security.md",
            )));
        }
        let caller = match &checked.tenant {
            Some(tenant) => actor.in_tenant(tenant),
            None => actor.global(),
        };
        // A `permit` gives what it permits until it is deleted: only what
        // the caller holds without end.
        caller.may_give(&checked.gives, None)?;
        Ok(checked)
    }
}
