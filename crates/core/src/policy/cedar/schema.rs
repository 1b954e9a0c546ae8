//! The Cedar schema (entity types from `route_rules/schema.cedarschema`,
//! one action per permission of the route rules) and the check of a
//! statement before it is stored: depth, syntax, schema, the spelling of
//! ids and paths, what it may match on, and what API Gateway's answer
//! cache lets it read (`AnswerCaching`).

use std::collections::BTreeSet;

use cedar_policy::{PolicySet, Schema, ValidationMode, Validator};

use super::reads::Reads;
use super::statement::{
    canonical_ids, canonical_paths, confined_to, gives_of, role_keyed, Keys, StatementError,
};
use crate::model::values::{Permission, PolicyId, TenantId};
use crate::policy::route_rules::Rule;

/// How API Gateway caches the authorizer's answers: what may a stored
/// policy read of the request without a cached answer being reused where
/// it no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerCaching {
    /// The identity sources include `context.identity.sourceIp`.
    pub keyed_on_source_ip: bool,
    /// `AuthorizerResultTtl`: zero disables API Gateway's cache.
    pub result_ttl_seconds: u64,
}

impl AnswerCaching {
    /// From the environment (`lookup`), as the template sets it for both
    /// the authorizer and provisioning: `AUTHORIZER_RESULT_TTL` (seconds,
    /// default 300, the template's default) and `CACHE_KEY_ON_SOURCE_IP`
    /// (`true` or `false`, default `false`).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, crate::runtime::config::ConfigError> {
        use crate::runtime::config::ConfigError;
        let result_ttl_seconds =
            match lookup("AUTHORIZER_RESULT_TTL").filter(|v| !v.trim().is_empty()) {
                None => 300,
                Some(v) => v.trim().parse::<u64>().map_err(|_| {
                    ConfigError::new("AUTHORIZER_RESULT_TTL", "must be a whole number of seconds")
                })?,
            };
        let keyed_on_source_ip = match lookup("CACHE_KEY_ON_SOURCE_IP").as_deref().map(str::trim) {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(ConfigError::new(
                    "CACHE_KEY_ON_SOURCE_IP",
                    "must be true or false",
                ))
            }
        };
        Ok(Self {
            keyed_on_source_ip,
            result_ttl_seconds,
        })
    }

    /// Refuses a policy whose answer would be reused for a request it does
    /// not hold for: one that reads the source IP when the cache does not
    /// key on it. (Time conditions are allowed: docs/policies.md states their
    /// bound. The method, path and route are part of what the answer is
    /// for: the authorizer lists only routes it evaluated.)
    pub fn admits(&self, reads: Reads) -> Result<(), String> {
        if reads.source_ip && !self.keyed_on_source_ip && self.result_ttl_seconds > 0 {
            return Err(
                "reads context.sourceIp, which API Gateway's authorizer cache does not \
                 key on, so an answer for one address would be reused for another: set the \
                 template's CacheKeyOnSourceIp to true (adds context.identity.sourceIp to the \
                 identity sources) or AuthorizerResultTtl to 0"
                    .into(),
            );
        }
        Ok(())
    }
}

/// A statement that passed the check.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The tenant the policy is confined to (`resource in Tenant::"..."`
    /// or `resource == Tenant::"..."`), or none for a global policy.
    pub tenant: Option<TenantId>,
    pub reads: Reads,
    /// What a `permit` policy can give: the actions it names (`*` when it
    /// names none). A `forbid` gives nothing.
    pub gives: Vec<Permission>,
    /// A `forbid` of every action outside `policy:*` for every caller on
    /// every resource, with no condition that can be false: stored, it
    /// would lock every administrator out (see [`PolicySchema::locks_out`]).
    pub locks_out: bool,
    /// A `permit` that matches on the roles held: every write that gives
    /// a role must see it, so it is kept in the global set even when it is
    /// confined to a tenant (tenants' own sets hold none).
    pub role_keyed: bool,
}

/// The schema: entity types from the schema file, one action per
/// permission of the route rules.
#[derive(Debug, Clone)]
pub struct PolicySchema {
    pub(super) schema: Schema,
    /// The actions: the route rules' permissions.
    pub(super) actions: BTreeSet<String>,
    /// Each action's routes (`GET /tenants/{tenantId}/members`): what it
    /// lets its holder do.
    routes: std::collections::BTreeMap<String, Vec<String>>,
    /// Each action's description, in words, from the route rules' files.
    descriptions: std::collections::BTreeMap<String, std::sync::Arc<str>>,
    /// Where each action is decided: `Tenant` (a tenant route needs it),
    /// `Platform` (a global one does), or both.
    scopes: std::collections::BTreeMap<String, BTreeSet<&'static str>>,
}

/// A permission this deployment knows: an action of the schema, the
/// routes that need it, and what it lets its holder do, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPermission<'a> {
    pub permission: &'a str,
    pub routes: &'a [String],
    pub description: Option<&'a str>,
}

impl PolicySchema {
    /// `entity_types` is the schema file's text; `rules` the route rules.
    /// An action applies to `Tenant` when any rule with its permission is a
    /// tenant route and to `Platform` when any is global.
    pub fn new(entity_types: &str, rules: &[Rule]) -> Result<Self, String> {
        let mut scopes: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
        let mut routes: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        let mut descriptions: std::collections::BTreeMap<String, std::sync::Arc<str>> =
            Default::default();
        for rule in rules {
            if let Some(d) = &rule.description {
                descriptions
                    .entry(rule.permission.to_string())
                    .or_insert_with(|| d.clone());
            }
            routes
                .entry(rule.permission.to_string())
                .or_default()
                .push(format!("{} {}", rule.method, rule.resource));
            scopes.entry(rule.permission.as_str()).or_default().insert(
                if rule.is_tenant_scoped() {
                    "Tenant"
                } else {
                    "Platform"
                },
            );
        }
        let actions = scopes.keys().map(|a| a.to_string()).collect();
        let decided: std::collections::BTreeMap<String, BTreeSet<&'static str>> = scopes
            .iter()
            .map(|(a, s)| (a.to_string(), s.clone()))
            .collect();
        let mut text = entity_types.to_string();
        text.push_str("\n// Actions: from the route rules.\n");
        for (permission, resources) in scopes {
            let resources: Vec<&str> = resources.into_iter().collect();
            text.push_str(&format!(
                "action \"{permission}\" appliesTo {{ principal: User, resource: [{}], context: RequestContext }};\n",
                resources.join(", ")
            ));
        }
        let (schema, _warnings) =
            Schema::from_cedarschema_str(&text).map_err(|e| format!("Cedar schema: {e}"))?;
        Ok(Self {
            schema,
            actions,
            routes,
            descriptions,
            scopes: decided,
        })
    }

    /// Whether `action` is one of the schema's actions.
    pub fn knows_action(&self, action: &str) -> bool {
        self.actions.contains(action)
    }

    /// Whether `action` is decided in a tenant (`true`: some tenant route
    /// needs it) or on the platform (`false`: some global route does).
    pub fn decided_where(&self, action: &str, in_tenant: bool) -> bool {
        let scope = if in_tenant { "Tenant" } else { "Platform" };
        self.scopes.get(action).is_some_and(|s| s.contains(scope))
    }

    /// Every permission the deployment knows, in order, with its routes.
    pub fn known_permissions(&self) -> impl Iterator<Item = KnownPermission<'_>> {
        self.actions.iter().map(|a| KnownPermission {
            permission: a,
            routes: self.routes.get(a).map_or(&[][..], Vec::as_slice),
            description: self.descriptions.get(a).map(|d| &**d),
        })
    }

    /// Whether a role may hold `permission`: an action the deployment
    /// knows, `*`, or a wildcard (`ticket:*`) some known action falls
    /// under. `Err` with the nearest known action when there is one.
    pub fn covers_something(&self, permission: &str) -> Result<(), Option<&str>> {
        let known = match permission.strip_suffix('*') {
            None => self.actions.contains(permission),
            Some(prefix) => self.actions.iter().any(|a| a.starts_with(prefix)),
        };
        if known {
            return Ok(());
        }
        Err(self
            .actions
            .iter()
            .map(|a| (edit_distance(a, permission), a))
            .filter(|(d, a)| *d <= (a.len() / 3).max(2))
            .min()
            .map(|(_, a)| a.as_str()))
    }

    /// Reads the schema file and the route rules.
    pub fn load(schema_file: &str, routes_file: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(schema_file)
            .map_err(|e| format!("Cedar schema {schema_file}: {e}"))?;
        let rules = crate::policy::route_rules::load(routes_file).map_err(|e| e.to_string())?;
        Self::new(&text, &rules)
    }

    /// Parses `statement` as one static Cedar policy and validates it
    /// against the schema (strict mode).
    pub fn check(&self, id: &PolicyId, statement: &str) -> Result<Checked, StatementError> {
        crate::policy::cedar::bounds::check(statement)
            .map_err(|e| StatementError::at_offset(statement, e.offset, e.to_string()))?;
        let policy = cedar_policy::Policy::parse(Some(cedar_id(id)), statement)
            .map_err(|e| StatementError::at(statement, &e, e.to_string()))?;
        canonical_ids(statement, &policy)?;
        canonical_paths(statement, &policy)?;
        let mut set = PolicySet::new();
        set.add(policy.clone()).map_err(|e| StatementError {
            line: 1,
            column: 1,
            message: e.to_string(),
        })?;
        let result = Validator::new(self.schema.clone()).validate(&set, ValidationMode::Strict);
        if let Some(error) = result.validation_errors().next() {
            return Err(StatementError::at(statement, error, error.to_string()));
        }
        let gives = gives_of(&policy)?;
        let keys = Keys::of(&policy);
        // What the caller themselves or a delegate sets directly: a permit
        // matching on it would let them give its actions to anyone,
        // themselves included, and a forbid matching on it would be lifted
        // by the one it stops (a user makes another verified address their
        // primary one; a tenant's admins rename it). Refused either way.
        if let Some(attr) = keys.delegated.first() {
            let leaf = attr.rsplit('.').next().unwrap_or(attr);
            let offset = statement.find(&format!(".{leaf}")).map_or(0, |i| i + 1);
            return Err(StatementError::at_offset(
                statement,
                offset,
                format!(
                    "a policy cannot match on {attr} (nor pass `principal` or `resource` around whole, which could read it): a user changes their own primary address, and a tenant's own admins its name, so a permit on it would give its actions to whoever sets it and a forbid on it would be lifted by the one it stops; match on a role (`principal in Role::\"<roleId>\"`) or an id instead"
                ),
            ));
        }
        if policy.effect() == cedar_policy::Effect::Permit && keys.negated {
            let offset = ["Role::", ".roles", ".permissions"]
                .iter()
                .filter_map(|s| statement.find(s))
                .min()
                .unwrap_or(0);
            return Err(StatementError::at_offset(
                statement,
                offset,
                "a permit cannot match on a role or permission not held (under `unless`, `!`, `!=`, `==`, `if`, or `isEmpty`, or comparing the whole set): removing a role is never limited, so whoever removed it would give the permit's actions; write a forbid for the role instead".to_string(),
            ));
        }
        Ok(Checked {
            tenant: confined_to(&policy),
            reads: Reads::of(&policy),
            gives,
            locks_out: self.locks_out(&policy),
            role_keyed: role_keyed(&policy),
        })
    }

    /// Whether `policy` is the lock-out shape: a `forbid` on any principal
    /// (or every `User`) and any resource (or every resource in
    /// `Platform::"platform"`, which is all of them), of every action
    /// outside `policy:*`, with no condition or only ones that hold
    /// whatever is asked: a condition that reads nothing of the request
    /// nor any entity (`when { true }`, `when { 1 == 1 }`, `unless { 1 > 2
    /// }`) is evaluated as written. A condition that reads the request is
    /// not proved: this catches the shape, not every statement that behaves
    /// like it.
    fn locks_out(&self, policy: &cedar_policy::Policy) -> bool {
        use cedar_policy::{ActionConstraint, PrincipalConstraint, ResourceConstraint};
        if policy.effect() != cedar_policy::Effect::Forbid {
            return false;
        }
        let every_principal = match policy.principal_constraint() {
            PrincipalConstraint::Any => true,
            PrincipalConstraint::Is(kind) => kind.to_string() == "User",
            _ => false,
        };
        let every_resource = match policy.resource_constraint() {
            ResourceConstraint::Any => true,
            ResourceConstraint::In(uid) => uid.to_string() == r#"Platform::"platform""#,
            _ => false,
        };
        let named: BTreeSet<String> = match policy.action_constraint() {
            ActionConstraint::Any => self.actions.clone(),
            ActionConstraint::Eq(action) => BTreeSet::from([action.id().unescaped().to_string()]),
            ActionConstraint::In(actions) => actions
                .iter()
                .map(|a| a.id().unescaped().to_string())
                .collect(),
        };
        let every_action = self
            .actions
            .iter()
            .filter(|a| !a.starts_with("policy:"))
            .all(|a| named.contains(a));
        every_principal
            && every_resource
            && every_action
            && policy.to_json().is_ok_and(|json| {
                json.get("conditions")
                    .and_then(|c| c.as_array())
                    .is_none_or(|conditions| conditions.iter().all(holds_whatever_asked))
            })
    }
}

/// Whether a policy's condition (its EST: `{kind, body}`) reads nothing
/// of the request or of any entity and holds as written: `when` true,
/// `unless` false. Evaluated by Cedar itself, as the condition of a
/// `permit` with no entities; one that errors does not hold (Cedar skips
/// a policy whose condition errors), nor one nested past 32 levels.
fn holds_whatever_asked(condition: &serde_json::Value) -> bool {
    /// How deep a condition is evaluated here: deeper ones (up to the
    /// statement bound) are left unproved, so that no check runs Cedar's
    /// recursion twice on a small stack.
    const DEPTH: usize = 32;
    fn reads_anything(value: &serde_json::Value, depth: usize) -> bool {
        if depth > DEPTH {
            return true;
        }
        match value {
            serde_json::Value::Object(map) => map.iter().any(|(key, inner)| {
                matches!(key.as_str(), "Var" | "Slot" | "__entity")
                    || reads_anything(inner, depth + 1)
            }),
            serde_json::Value::Array(items) => items.iter().any(|v| reads_anything(v, depth + 1)),
            _ => false,
        }
    }
    if reads_anything(condition, 0) {
        return false;
    }
    let est = serde_json::json!({
        "effect": "permit",
        "principal": {"op": "All"},
        "action": {"op": "All"},
        "resource": {"op": "All"},
        "conditions": [condition],
    });
    let uid = |kind: &str| {
        format!(r#"{kind}::"constant""#)
            .parse::<cedar_policy::EntityUid>()
            .ok()
    };
    let (Ok(policy), Some(principal), Some(action), Some(resource)) = (
        cedar_policy::Policy::from_json(None, est),
        uid("User"),
        uid("Action"),
        uid("Platform"),
    ) else {
        return false;
    };
    let Ok(set) = PolicySet::from_policies([policy]) else {
        return false;
    };
    let Ok(request) = cedar_policy::Request::new(
        principal,
        action,
        resource,
        cedar_policy::Context::empty(),
        None,
    ) else {
        return false;
    };
    cedar_policy::Authorizer::new()
        .is_authorized(&request, &set, &cedar_policy::Entities::empty())
        .decision()
        == cedar_policy::Decision::Allow
}

pub(super) fn cedar_id(id: &PolicyId) -> cedar_policy::PolicyId {
    cedar_policy::PolicyId::new(id.as_str())
}

/// Levenshtein distance between two short strings (characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}
