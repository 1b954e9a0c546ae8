//! Cedar policies: the schema (entity types from `route_rules/schema.cedarschema`,
//! one action per permission of the route rules), the check of a statement
//! before it is stored (syntax, schema, tenant scope, what it reads of the
//! request), and the decision over the stored policy set that the
//! authorizer and `POST /authorize` both use.
//!
//! The decision: allow if and only if (the caller's roles grant the
//! permission, or a `permit` matches) and no `forbid` matches. Cedar skips
//! a policy whose evaluation errors, which would silently skip a `forbid`,
//! so any error in a policy that could apply is a Deny.

pub mod bounds;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{
    Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicySet, Request,
    ResourceConstraint, RestrictedExpression, Schema, ValidationMode, Validator,
};
use miette::Diagnostic;

use crate::model::items::{Policy, PolicyCounts, Tenant, TenantGrant, User};
use crate::model::values::{
    any_grants, Permission, PolicyId, RoleId, TenantId, TenantStatus, UserStatus,
};
use crate::policy::ceiling::{RoleKeyedPermit, RoleKeyedPermits};
use crate::policy::route_rules::Rule;

/// The id of the one `Platform` entity: the resource of global routes.
pub const PLATFORM: &str = "platform";

/// The prefix of the permissions that manage policies: a holder of `*`
/// everywhere is never stopped by a policy on them (break glass).
pub const POLICY_ACTIONS: &str = "policy:";

/// How long a read of the policy set may take (or be waited for) before
/// it counts as failed.
pub const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Most policies with a statement the set may hold (the authorizer keeps
/// all of them in memory and evaluates the applicable ones per decision).
pub const POLICIES_MAX: usize = 1000;

/// A statement Cedar rejected, and where: 1-based line and column of the
/// first problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct StatementError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a statement reads of the request context, as far as caching goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// `context.sourceIp`: not part of API Gateway's cache key unless the
    /// authorizer's identity sources include it.
    pub source_ip: bool,
    /// `context.time`: the answer holds for as long as it is cached.
    pub time: bool,
    /// `context.method`, `context.path` or `context.route`: the answer is
    /// for this route only.
    pub request_shape: bool,
}

impl Reads {
    fn union(self, other: Reads) -> Reads {
        Reads {
            source_ip: self.source_ip || other.source_ip,
            time: self.time || other.time,
            request_shape: self.request_shape || other.request_shape,
        }
    }

    fn attribute(&mut self, name: &str) {
        match name {
            "sourceIp" => self.source_ip = true,
            "time" => self.time = true,
            "method" | "path" | "route" => self.request_shape = true,
            _ => {}
        }
    }

    /// The context read as a whole (`context == {...}`): everything.
    fn everything() -> Reads {
        Reads {
            source_ip: true,
            time: true,
            request_shape: true,
        }
    }

    /// From a policy's JSON form: every `context.x` / `context has x`.
    fn of(policy: &cedar_policy::Policy) -> Reads {
        fn walk(value: &serde_json::Value, reads: &mut Reads) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, inner) in map {
                        let on_context = (key == "." || key == "has")
                            && inner.get("left").and_then(|l| l.get("Var"))
                                == Some(&serde_json::Value::from("context"));
                        if on_context {
                            match inner.get("attr").and_then(|a| a.as_str()) {
                                Some(name) => reads.attribute(name),
                                None => *reads = reads.union(Reads::everything()),
                            }
                        } else if key == "Var" && inner == "context" {
                            *reads = reads.union(Reads::everything());
                        } else {
                            walk(inner, reads);
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, reads)),
                _ => {}
            }
        }
        let mut reads = Reads::default();
        match policy.to_json() {
            Ok(json) => walk(&json, &mut reads),
            // Not expected for a parsed static policy; assume the worst.
            Err(_) => reads = Reads::everything(),
        }
        reads
    }
}

/// What a policy matches the caller or the tenant on that an admin of the
/// system can change, and so could give a `permit`'s actions by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Keys {
    /// It reads the roles held (`principal in Role::"..."`,
    /// `principal.roles`, `principal.permissions`): giving a role can make
    /// it match.
    roles: bool,
    /// It compares them with something other than literals (or reads them
    /// whole, or reaches the caller some other way): any role given can
    /// make it match.
    any_role: bool,
    /// It reads them where holding less can make it match (under `!`,
    /// `unless`, an `if`, `!=`, `==`, `isEmpty`): removing a role, which
    /// is never limited, could give it.
    negated: bool,
    /// The role ids and the literal strings it compares the roles and
    /// permissions held with (`roles.contains("...")`,
    /// `permissions.containsAny([...])`).
    mentions: BTreeSet<String>,
    /// Attributes it reads that a delegate sets directly: a user's email
    /// (`user:update`) and a tenant's name (`tenant:update` in that
    /// tenant).
    delegated: BTreeSet<&'static str>,
}

impl Keys {
    /// From a policy's JSON form (Cedar's EST).
    fn of(policy: &cedar_policy::Policy) -> Keys {
        let mut keys = Keys::default();
        match policy.to_json() {
            Ok(json) => {
                // The scope matches positively; each condition's body is
                // negated in an `unless`.
                for part in ["principal", "action", "resource"] {
                    if let Some(scope) = json.get(part) {
                        keys.walk(scope, false);
                    }
                }
                for condition in json
                    .get("conditions")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    let negative = condition.get("kind").and_then(|k| k.as_str()) == Some("unless");
                    if let Some(body) = condition.get("body") {
                        keys.walk(body, negative);
                    }
                }
            }
            // Not expected for a parsed static policy: assume the worst.
            Err(_) => keys.worst(),
        }
        keys
    }

    fn worst(&mut self) {
        (self.roles, self.any_role, self.negated) = (true, true, true);
        self.delegated
            .extend(["principal.email", "principal.emailDomain", "resource.name"]);
    }

    /// A read of the roles held, positive or not.
    fn role_read(&mut self, negative: bool) {
        self.roles = true;
        self.negated |= negative;
    }

    /// `principal.roles` or `principal.permissions`.
    fn held_set(value: &serde_json::Value) -> bool {
        let Some(access) = value.get(".") else {
            return false;
        };
        Self::var(access.get("left")) == Some("principal")
            && matches!(
                access.get("attr").and_then(|a| a.as_str()),
                Some("roles" | "permissions")
            )
    }

    /// The variable an operand is, if it is one (`{"Var": "principal"}`).
    fn var(value: Option<&serde_json::Value>) -> Option<&str> {
        value.and_then(|v| v.get("Var")).and_then(|v| v.as_str())
    }

    /// The strings of a literal string or set of them.
    fn literals(value: &serde_json::Value) -> Option<Vec<String>> {
        if let Some(s) = value.get("Value").and_then(|v| v.as_str()) {
            return Some(vec![s.to_string()]);
        }
        value
            .get("Set")?
            .as_array()?
            .iter()
            .map(|v| v.get("Value").and_then(|v| v.as_str()).map(str::to_string))
            .collect()
    }

    /// Walks an expression; `negative`: where a match could come from
    /// holding less.
    fn walk(&mut self, value: &serde_json::Value, negative: bool) {
        let map = match value {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Array(items) => {
                items.iter().for_each(|v| self.walk(v, negative));
                return;
            }
            _ => return,
        };
        if let (Some("Role"), Some(id)) = (
            map.get("type").and_then(|t| t.as_str()),
            map.get("id").and_then(|i| i.as_str()),
        ) {
            self.role_read(negative);
            self.mentions.insert(id.to_string());
        }
        // A record literal's attribute names are not operators: walk its
        // values as expressions.
        if let Some(serde_json::Value::Object(fields)) = map.get("Record") {
            fields.values().for_each(|v| self.walk(v, negative));
            return;
        }
        for (key, inner) in map {
            match key.as_str() {
                // The caller or the tenant reached other than by a direct
                // attribute, membership or equality test (in a record, an
                // `if`): anything may be read of them.
                "Var" => match inner.as_str() {
                    Some("principal") => {
                        self.any_role = true;
                        self.role_read(negative);
                        self.delegated
                            .extend(["principal.email", "principal.emailDomain"]);
                    }
                    Some("resource") => {
                        self.delegated.insert("resource.name");
                    }
                    _ => {}
                },
                "." | "has" => {
                    let on = Self::var(inner.get("left"));
                    let attr = inner.get("attr").and_then(|a| a.as_str());
                    match (on, attr, key.as_str()) {
                        (Some("principal"), Some("roles" | "permissions"), ".") => {
                            // Read whole (not compared with literals).
                            self.any_role = true;
                            self.role_read(true);
                        }
                        (Some("principal"), Some(attr @ ("email" | "emailDomain")), ".") => {
                            self.delegated.insert(if attr == "email" {
                                "principal.email"
                            } else {
                                "principal.emailDomain"
                            });
                        }
                        (Some("resource"), Some("name"), ".") => {
                            self.delegated.insert("resource.name");
                        }
                        (Some("principal" | "resource"), _, _) => {}
                        _ => self.walk(inner, negative),
                    }
                }
                "contains" | "containsAll" | "containsAny"
                    if inner.get("left").is_some_and(Self::held_set) =>
                {
                    self.role_read(negative);
                    match inner.get("right").and_then(Self::literals) {
                        Some(found) => self.mentions.extend(found),
                        None => self.any_role = true,
                    }
                    if let Some(right) = inner.get("right") {
                        self.walk(right, negative);
                    }
                }
                "!" => {
                    if let Some(arg) = inner.get("arg") {
                        self.walk(arg, !negative);
                    }
                }
                // Either way round: a match may come from holding less.
                "!=" | "==" | "isEmpty" | "if-then-else" => {
                    let operands = |names: &[&str]| -> Vec<&serde_json::Value> {
                        names.iter().filter_map(|n| inner.get(*n)).collect()
                    };
                    for operand in operands(&["left", "right", "arg", "if"]) {
                        if Self::var(Some(operand)).is_some() && key != "if-then-else" {
                            continue; // `principal == User::"..."`
                        }
                        self.walk(operand, true);
                    }
                    for operand in operands(&["then", "else"]) {
                        self.walk(operand, negative);
                    }
                }
                "in" | "is" => {
                    for (name, operand) in inner.as_object().into_iter().flatten() {
                        if name == "left" && Self::var(Some(operand)).is_some() {
                            continue; // `principal in Role::"..."`
                        }
                        self.walk(operand, negative);
                    }
                }
                _ => self.walk(inner, negative),
            }
        }
    }
}

/// What a `permit` can grant: the actions it names (`*` when it names
/// none). A `forbid` confers nothing.
fn confers_of(policy: &cedar_policy::Policy) -> Result<Vec<Permission>, StatementError> {
    Ok(match (policy.effect(), policy.action_constraint()) {
        (cedar_policy::Effect::Forbid, _) => Vec::new(),
        (cedar_policy::Effect::Permit, cedar_policy::ActionConstraint::Any) => {
            vec![Permission::parse("*").expect("* is a permission")]
        }
        (cedar_policy::Effect::Permit, cedar_policy::ActionConstraint::Eq(a)) => {
            vec![action_permission(&a)?]
        }
        (cedar_policy::Effect::Permit, cedar_policy::ActionConstraint::In(actions)) => actions
            .iter()
            .map(action_permission)
            .collect::<Result<_, _>>()?,
    })
}

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
    /// key on it. (Time conditions are allowed: the README states their
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
    /// What a `permit` policy can grant: the actions it names (`*` when it
    /// names none). A `forbid` confers nothing.
    pub confers: Vec<Permission>,
}

/// The schema: entity types from the schema file, one action per
/// permission of the route rules.
#[derive(Debug, Clone)]
pub struct PolicySchema {
    schema: Schema,
    /// The actions: the route rules' permissions.
    actions: BTreeSet<String>,
}

impl PolicySchema {
    /// `entity_types` is the schema file's text; `rules` the route rules.
    /// An action applies to `Tenant` when any rule with its permission is a
    /// tenant route and to `Platform` when any is global.
    pub fn new(entity_types: &str, rules: &[Rule]) -> Result<Self, String> {
        let mut scopes: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
        for rule in rules {
            scopes.entry(rule.permission.as_str()).or_default().insert(
                if rule.is_tenant_scoped() {
                    "Tenant"
                } else {
                    "Platform"
                },
            );
        }
        let actions = scopes.keys().map(|a| a.to_string()).collect();
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
        Ok(Self { schema, actions })
    }

    /// Whether `action` is one of the schema's actions.
    pub fn knows_action(&self, action: &str) -> bool {
        self.actions.contains(action)
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
        let confers = confers_of(&policy)?;
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
            confers,
        })
    }
}

impl StatementError {
    /// The position of the diagnostic's first label (1, 1 without one).
    fn at(text: &str, diagnostic: &dyn Diagnostic, message: String) -> Self {
        let offset = diagnostic
            .labels()
            .and_then(|mut labels| labels.next())
            .map_or(0, |label| label.offset());
        let help = diagnostic
            .help()
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        Self::at_offset(text, offset, format!("{message}{help}"))
    }

    /// `message` at byte `offset` of `text` (1, 1 when it is not on a
    /// character boundary of the text).
    fn at_offset(text: &str, offset: usize, message: String) -> Self {
        let before = text.get(..offset).unwrap_or("");
        Self {
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
            message,
        }
    }
}

/// Refuses a `Tenant`, `User` or `Role` id that is not a ULID in its
/// canonical (upper-case) spelling: requests name them that way, so a
/// policy naming `Tenant::"01j..."` would never match anything.
fn canonical_ids(statement: &str, policy: &cedar_policy::Policy) -> Result<(), StatementError> {
    fn walk(value: &serde_json::Value, found: &mut Vec<(String, String)>) {
        match value {
            serde_json::Value::Object(map) => {
                if let (Some(t), Some(id)) = (
                    map.get("type").and_then(|t| t.as_str()),
                    map.get("id").and_then(|i| i.as_str()),
                ) {
                    found.push((t.to_string(), id.to_string()));
                }
                map.values().for_each(|v| walk(v, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    if let Ok(json) = policy.to_json() {
        walk(&json, &mut found);
    }
    for (type_name, id) in found {
        let canonical = match type_name.as_str() {
            "Tenant" => TenantId::parse(&id).map(|t| t.to_string()).ok(),
            "User" => crate::model::values::UserId::parse(&id)
                .map(|u| u.to_string())
                .ok(),
            "Role" => RoleId::parse(&id).map(|r| r.to_string()).ok(),
            _ => continue,
        };
        if canonical.as_deref() != Some(id.as_str()) {
            let offset = statement.find(&format!("\"{id}\"")).map_or(0, |i| i + 1);
            let message = match canonical {
                Some(c) => format!("{type_name}::\"{id}\" is not written as requests name it: write {type_name}::\"{c}\""),
                None => format!("{type_name}::\"{id}\" is not a {} id (a ULID)", type_name.to_lowercase()),
            };
            return Err(StatementError::at_offset(statement, offset, message));
        }
    }
    Ok(())
}

/// Refuses a path a statement compares `context.path` with that is not in
/// the spelling the path has there ([`Facts::canonical_path`]: ids in upper
/// case, percent-encoding decoded): it would never match. Every string
/// literal and `like` pattern with a `/` in it counts, when the statement
/// reads `context.path`.
fn canonical_paths(statement: &str, policy: &cedar_policy::Policy) -> Result<(), StatementError> {
    fn walk(value: &serde_json::Value, reads_path: &mut bool, literals: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("Value", serde_json::Value::String(text)) => literals.push(text.clone()),
                        // A `like` pattern, a character at a time: whole,
                        // with `*` for its wildcards.
                        ("pattern", serde_json::Value::Array(pieces)) => literals.push(
                            pieces
                                .iter()
                                .map(|p| p.get("Literal").and_then(|l| l.as_str()).unwrap_or("*"))
                                .collect(),
                        ),
                        ("Var", serde_json::Value::String(var)) if var == "context" => {
                            // The context whole, or `context.path`, below.
                            if !map.contains_key("attr") {
                                *reads_path = true;
                            }
                        }
                        ("." | "has", _)
                            if inner.get("left").and_then(|l| l.get("Var"))
                                == Some(&serde_json::Value::from("context")) =>
                        {
                            if inner.get("attr").and_then(|a| a.as_str()) == Some("path") {
                                *reads_path = true;
                            }
                        }
                        _ => walk(inner, reads_path, literals),
                    }
                }
            }
            serde_json::Value::Array(items) => {
                items.iter().for_each(|v| walk(v, reads_path, literals))
            }
            _ => {}
        }
    }
    let (mut reads_path, mut literals) = (false, Vec::new());
    match policy.to_json() {
        Ok(json) => walk(&json, &mut reads_path, &mut literals),
        Err(_) => return Ok(()),
    }
    if !reads_path {
        return Ok(());
    }
    for literal in literals.iter().filter(|l| l.contains('/')) {
        let canonical = Facts::canonical_path(literal);
        if canonical != *literal {
            let offset = literal
                .split('*')
                .find(|piece| !piece.is_empty())
                .and_then(|piece| statement.find(piece))
                .unwrap_or(0);
            return Err(StatementError::at_offset(
                statement,
                offset,
                format!(
                    "{literal:?} is not spelled as context.path holds a path (ids in upper case, \
                     percent-encoding decoded), so it would never match: write {canonical:?}"
                ),
            ));
        }
    }
    Ok(())
}

/// The permission an action of the schema stands for.
fn action_permission(action: &EntityUid) -> Result<Permission, StatementError> {
    Permission::parse(action.id().unescaped()).map_err(|e| StatementError {
        line: 1,
        column: 1,
        message: format!("{action} is not a permission: {e}"),
    })
}

fn cedar_id(id: &PolicyId) -> cedar_policy::PolicyId {
    cedar_policy::PolicyId::new(id.as_str())
}

/// An entity uid. The type names are parsed once (parsing one runs
/// Cedar's parser: microseconds, on every decision otherwise).
fn uid(type_name: &str, id: &str) -> EntityUid {
    static TYPES: std::sync::OnceLock<HashMap<&'static str, EntityTypeName>> =
        std::sync::OnceLock::new();
    let types = TYPES.get_or_init(|| {
        ["User", "Role", "Tenant", "Platform", "Action"]
            .into_iter()
            .map(|t| (t, EntityTypeName::from_str(t).expect("a valid type name")))
            .collect()
    });
    let name = match types.get(type_name) {
        Some(t) => t.clone(),
        None => EntityTypeName::from_str(type_name).expect("a valid type name"),
    };
    EntityUid::from_type_name_and_id(name, EntityId::new(id))
}

/// The one Cedar authorizer (stateless; built once).
fn cedar_authorizer() -> &'static cedar_policy::Authorizer {
    static AUTHORIZER: std::sync::OnceLock<cedar_policy::Authorizer> = std::sync::OnceLock::new();
    AUTHORIZER.get_or_init(cedar_policy::Authorizer::new)
}

/// The tenant a policy's resource scope confines it to.
fn confined_to(policy: &cedar_policy::Policy) -> Option<TenantId> {
    let target = match policy.resource_constraint() {
        ResourceConstraint::In(u) | ResourceConstraint::Eq(u) | ResourceConstraint::IsIn(_, u) => u,
        ResourceConstraint::Any | ResourceConstraint::Is(_) => return None,
    };
    (target.type_name().to_string() == "Tenant")
        .then(|| TenantId::parse(target.id().unescaped()).ok())
        .flatten()
}

/// A policy that determined a decision, as the log line and the API name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Determining {
    pub policy_id: String,
    pub name: String,
}

/// What the policies say about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No policy matched: the roles decide.
    NoMatch,
    /// These `permit` policies matched and no `forbid` did.
    Permit(Vec<Determining>),
    /// These `forbid` policies matched.
    Forbid(Vec<Determining>),
    /// A policy that could apply failed to evaluate (or the request could
    /// not be built): Deny.
    Error {
        policies: Vec<Determining>,
        message: String,
    },
}

impl Verdict {
    /// The decision, given whether the caller's roles (or a self rule)
    /// grant the permission.
    pub fn allows(&self, roles_allow: bool) -> bool {
        match self {
            Verdict::NoMatch => roles_allow,
            Verdict::Permit(_) => true,
            Verdict::Forbid(_) | Verdict::Error { .. } => false,
        }
    }

    /// The policies that determined it.
    pub fn determining(&self) -> &[Determining] {
        match self {
            Verdict::NoMatch => &[],
            Verdict::Permit(p) | Verdict::Forbid(p) => p,
            Verdict::Error { policies, .. } => policies,
        }
    }
}

/// Who is asking, as the table has them: the caller and, on a tenant's
/// resource, the tenant (absent if it does not exist) and what they hold
/// there.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub user: &'a User,
    /// `Some` for a tenant's resource: the tenant item, if there is one.
    pub tenant: Option<(&'a TenantId, Option<&'a Tenant>)>,
    /// Role ids held here (global and this tenant's grant).
    pub roles: &'a [RoleId],
    /// Permissions held here.
    pub permissions: &'a [Permission],
}

/// The request's context (see `RequestContext` in the schema).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub source_ip: String,
    /// RFC 3339, UTC.
    pub time: String,
    pub method: String,
    pub path: String,
    pub route: String,
    pub amr: Option<Vec<String>>,
    pub acr: Option<String>,
    pub scope: Option<Vec<String>>,
}

impl Facts {
    /// A request path in the one spelling `context.path` holds: each
    /// segment percent-decoded (kept as sent when it does not decode to
    /// UTF-8), and a segment that is a ULID written as ids are everywhere
    /// else, in upper case. The rest of a decision reads ids whatever
    /// their case (a grant is read for `/tenants/01j8…` as for
    /// `/tenants/01J8…`) and API Gateway decodes path parameters, so a
    /// policy comparing the path as the client spelled it could be
    /// bypassed by spelling an id another way.
    pub fn canonical_path(path: &str) -> String {
        path.split('/')
            .map(|segment| {
                let decoded = percent_encoding::percent_decode_str(segment)
                    .decode_utf8()
                    .map_or_else(|_| segment.to_string(), |d| d.into_owned());
                match crate::model::values::TenantId::parse(&decoded) {
                    Ok(id) => id.to_string(),
                    Err(_) => decoded,
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The current time as `context.time` holds it: RFC 3339 in whole
    /// seconds, UTC (a form Cedar's `datetime` accepts).
    pub fn time_now() -> String {
        Self::time_at(crate::model::items::now_seconds() as i64)
            .expect("the system clock is within RFC 3339's range")
    }

    /// An RFC 3339 date-time as `context.time` holds it (whole seconds,
    /// UTC), or `None` if it is not one.
    pub fn time_from(rfc3339: &str) -> Option<String> {
        use aws_smithy_types::date_time::Format;
        let parsed = aws_smithy_types::DateTime::from_str(rfc3339, Format::DateTime).ok()?;
        Self::time_at(parsed.secs())
    }

    fn time_at(secs: i64) -> Option<String> {
        aws_smithy_types::DateTime::from_secs(secs)
            .fmt(aws_smithy_types::date_time::Format::DateTime)
            .ok()
    }

    /// The context, with the IP address and the time only when `reads`
    /// says a policy reads them: as Cedar extension values they cost
    /// microseconds each to build (Cedar parses the constructor's name and
    /// the value every time). Leaving one out rests on [`Reads::of`]
    /// seeing every read, `context has time` included: that test would
    /// answer false for an attribute left out (an access would fail to
    /// evaluate, which denies).
    fn context(&self, reads: Reads) -> Result<Context, String> {
        let mut pairs = vec![
            (
                "method".to_string(),
                RestrictedExpression::new_string(self.method.clone()),
            ),
            (
                "path".to_string(),
                RestrictedExpression::new_string(self.path.clone()),
            ),
            (
                "route".to_string(),
                RestrictedExpression::new_string(self.route.clone()),
            ),
        ];
        if reads.source_ip {
            static LAST: LastExpression = LastExpression::new();
            pairs.push((
                "sourceIp".to_string(),
                LAST.get(&self.source_ip, |t| RestrictedExpression::new_ip(t)),
            ));
        }
        if reads.time {
            static LAST: LastExpression = LastExpression::new();
            pairs.push((
                "time".to_string(),
                LAST.get(&self.time, |t| RestrictedExpression::new_datetime(t)),
            ));
        }
        if let Some(amr) = &self.amr {
            pairs.push(("amr".into(), string_set(amr.iter().cloned())));
        }
        if let Some(acr) = &self.acr {
            pairs.push(("acr".into(), RestrictedExpression::new_string(acr.clone())));
        }
        if let Some(scope) = &self.scope {
            pairs.push(("scope".into(), string_set(scope.iter().cloned())));
        }
        Context::from_pairs(pairs).map_err(|e| format!("request context: {e}"))
    }
}

/// A Cedar set of strings.
fn string_set(values: impl IntoIterator<Item = String>) -> RestrictedExpression {
    RestrictedExpression::new_set(values.into_iter().map(RestrictedExpression::new_string))
}

/// The extension-value expression built last, by its text: Cedar parses
/// the constructor's name (`ip`, `datetime`) each time it builds one, about
/// 3 µs; the time changes once a second, and one decision (the routes of
/// one path) or one caller's next request asks for the same address again.
struct LastExpression(std::sync::Mutex<Option<(String, RestrictedExpression)>>);

impl LastExpression {
    const fn new() -> Self {
        Self(std::sync::Mutex::new(None))
    }

    fn get(&self, text: &str, build: fn(&str) -> RestrictedExpression) -> RestrictedExpression {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*last {
            Some((t, expression)) if t == text => expression.clone(),
            _ => {
                let expression = build(text);
                *last = Some((text.to_string(), expression.clone()));
                expression
            }
        }
    }
}

/// A subject's entities, built: the principal, the resource (the tenant,
/// or the platform) and the store Cedar reads them from.
#[derive(Debug)]
struct Built {
    principal: EntityUid,
    resource: EntityUid,
    entities: Entities,
}

impl Built {
    /// Everything the entities are built from, written out: two subjects
    /// with the same key have the same entities.
    fn key(subject: &Subject<'_>) -> String {
        use std::fmt::Write;
        let user = subject.user;
        let mut key = String::with_capacity(256);
        let mut field = |value: &str| {
            let _ = write!(key, "{}:{value};", value.len());
        };
        field(&user.user_id.to_string());
        field(user.status.as_str());
        field(user.email.as_str());
        for role in subject.roles {
            field(&role.to_string());
        }
        field("|");
        for permission in subject.permissions {
            field(permission.as_str());
        }
        field("|");
        if let Some((tenant_id, tenant)) = subject.tenant {
            field(&tenant_id.to_string());
            if let Some(tenant) = tenant {
                field(tenant.name.as_str());
                field(tenant.status.as_str());
            }
        }
        key
    }

    fn of(subject: &Subject<'_>) -> Result<Self, String> {
        let user = subject.user;
        let principal = uid("User", &user.user_id.to_string());
        let email = user.email.as_str().to_string();
        let domain = email.rsplit_once('@').map_or("", |(_, d)| d).to_string();
        let roles: Vec<String> = subject.roles.iter().map(|r| r.to_string()).collect();
        let parents: HashSet<EntityUid> = roles.iter().map(|r| uid("Role", r)).collect();
        let attrs = HashMap::from([
            (
                "status".to_string(),
                RestrictedExpression::new_string(user.status.as_str().to_string()),
            ),
            ("email".into(), RestrictedExpression::new_string(email)),
            (
                "emailDomain".into(),
                RestrictedExpression::new_string(domain),
            ),
            ("roles".into(), string_set(roles)),
            (
                "permissions".into(),
                string_set(subject.permissions.iter().map(|p| p.as_str().to_string())),
            ),
        ]);
        let mut entities = vec![Entity::new(principal.clone(), attrs, parents)
            .map_err(|e| format!("principal: {e}"))?];
        let platform = uid("Platform", PLATFORM);
        entities.push(Entity::new_no_attrs(platform.clone(), HashSet::new()));
        let resource = match subject.tenant {
            None => platform,
            Some((tenant_id, tenant)) => {
                let resource = uid("Tenant", &tenant_id.to_string());
                // It is always in the platform; a tenant with no item has no
                // attributes, so a policy that reads them errors (a Deny).
                let parents = HashSet::from([platform]);
                entities.push(match tenant {
                    None => Entity::new_no_attrs(resource.clone(), parents),
                    Some(tenant) => {
                        let attrs = HashMap::from([
                            (
                                "name".to_string(),
                                RestrictedExpression::new_string(tenant.name.to_string()),
                            ),
                            (
                                "status".to_string(),
                                RestrictedExpression::new_string(
                                    tenant.status.as_str().to_string(),
                                ),
                            ),
                        ]);
                        Entity::new(resource.clone(), attrs, parents)
                            .map_err(|e| format!("resource: {e}"))?
                    }
                });
                resource
            }
        };
        // Added to an empty store rather than `Entities::from_entities`:
        // the same entities and closure, but that one runs Cedar's
        // cycle-safe closure (measured 8 µs for these three, against 4).
        let entities = Entities::empty()
            .add_entities(entities, None)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            principal,
            resource,
            entities,
        })
    }
}

/// Subjects' entities as one policy set has built them, by
/// [`Built::key`]: building them is most of a decision's cost (about 8 µs
/// of Cedar's hashing and copying), and the same caller is decided again
/// for the other routes of a path and for their next uncached request.
/// It lives as long as the set (one refresh interval) and is emptied when
/// it reaches [`EntityMemo::CAPACITY`].
#[derive(Default)]
struct EntityMemo(std::sync::Mutex<HashMap<String, std::sync::Arc<Built>>>);

impl EntityMemo {
    const CAPACITY: usize = 1024;

    fn get(&self, subject: &Subject<'_>) -> Result<std::sync::Arc<Built>, String> {
        let key = Built::key(subject);
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(built) = lock().get(&key) {
            return Ok(built.clone());
        }
        let built = std::sync::Arc::new(Built::of(subject)?);
        let mut memo = lock();
        if memo.len() >= Self::CAPACITY {
            memo.clear();
        }
        memo.insert(key, built.clone());
        Ok(built)
    }
}

/// A copy starts empty (what it would hold is rebuilt on use).
impl Clone for EntityMemo {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for EntityMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.0.lock().map_or(0, |m| m.len());
        write!(f, "EntityMemo({len} subjects)")
    }
}

/// The table's side of a decision: the caller and, on a tenant's
/// resource, the tenant (absent if it does not exist) and their grant in it.
#[derive(Debug, Clone, Copy)]
pub struct Standing<'a> {
    pub user: Option<&'a User>,
    pub tenant: Option<(&'a TenantId, Option<&'a Tenant>)>,
    pub grant: Option<&'a TenantGrant>,
}

impl<'a> Standing<'a> {
    /// The grant, if it counts: a grant in a tenant that is gone or being
    /// deleted gives nothing (its grants are removed in the background),
    /// nor does one that has ended (DynamoDB's TTL removes it later).
    pub fn counted_grant(&self) -> Option<&'a TenantGrant> {
        let active = self
            .tenant
            .and_then(|(_, t)| t)
            .is_some_and(|t| t.status == TenantStatus::Active);
        let now = crate::model::items::now_seconds();
        self.grant.filter(|g| active && !g.expired_at(now))
    }
}

/// A decision and what it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub allowed: bool,
    /// `permitted`, or why not.
    pub reason: &'static str,
    pub verdict: Verdict,
    /// Permissions held here (grant and global roles), sorted.
    pub permissions: Vec<Permission>,
    /// Role ids held here: the grant's, then the global ones.
    pub roles: Vec<RoleId>,
}

/// Policies of one scope (global, or one tenant's own) that name one
/// action, or that name none.
#[derive(Debug, Clone, Default)]
struct Slice {
    set: PolicySet,
    /// What they read of the context.
    reads: Reads,
}

impl Slice {
    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    fn add(&mut self, policy: cedar_policy::Policy, reads: Reads) -> bool {
        self.reads = self.reads.union(reads);
        self.set.add(policy).is_ok()
    }
}

/// The policies of one scope, indexed by the action they name: Cedar
/// evaluates every policy of the set it is given (about a microsecond
/// each even when the action does not match), so a decision hands it only
/// the policies that name its action and those that name none. That
/// `action in [...]` holds for exactly the listed actions rests on the
/// entities a decision passes holding no `Action` entities (no schema is
/// given to the store or the request): Cedar then takes `in` of an
/// unknown entity as `==`. Passing action groups would need them here.
#[derive(Debug, Clone, Default)]
struct Scope {
    /// Policies with no action constraint.
    any: Slice,
    /// Per action, the policies that name it (`==` or in their list).
    by_action: HashMap<String, Slice>,
}

impl Scope {
    /// Adds `policy`; false if a slice refused it (a duplicate id).
    fn add(&mut self, policy: cedar_policy::Policy, reads: Reads) -> bool {
        match policy.action_constraint() {
            cedar_policy::ActionConstraint::Any => self.any.add(policy, reads),
            cedar_policy::ActionConstraint::Eq(action) => self
                .by_action
                .entry(action.id().unescaped().to_string())
                .or_default()
                .add(policy, reads),
            cedar_policy::ActionConstraint::In(actions) => {
                let names: BTreeSet<String> = actions
                    .iter()
                    .map(|a| a.id().unescaped().to_string())
                    .collect();
                names.into_iter().fold(true, |ok, name| {
                    let added = self
                        .by_action
                        .entry(name)
                        .or_default()
                        .add(policy.clone(), reads);
                    ok && added
                })
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.any.is_empty() && self.by_action.values().all(Slice::is_empty)
    }

    /// The slices that can apply to `action`.
    fn for_action<'s>(&'s self, action: &str) -> impl Iterator<Item = &'s Slice> {
        std::iter::once(&self.any)
            .chain(self.by_action.get(action))
            .filter(|s| !s.is_empty())
    }
}

/// The stored policies, ready to decide with: the global ones and each
/// tenant's own, each indexed by action.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    global: Scope,
    by_tenant: HashMap<TenantId, Scope>,
    /// Policy ids by name. Inside Cedar a policy is known by its name,
    /// which the table keeps unique (`policyId` is not a uniqueness rule,
    /// and a second policy under one Cedar id would not be added).
    ids: HashMap<String, String>,
    /// Stored statements that no longer parse (or could not join the set):
    /// every decision is an error naming them (a broken `forbid` must not
    /// be skipped).
    broken: Vec<Determining>,
    len: usize,
    memo: EntityMemo,
    /// The permits, for [`Policies::role_keyed`].
    permits: Vec<cedar_policy::Policy>,
    /// The permits that match on roles held: what giving a role gives.
    /// Found on first use (provisioning's writes; never in the authorizer).
    role_keyed: std::sync::OnceLock<RoleKeyedPermits>,
}

impl Policies {
    /// Builds the set from the stored policy items (those without a
    /// statement are metadata only and decide nothing).
    pub fn build<'a>(items: impl IntoIterator<Item = &'a Policy>) -> Self {
        Self::build_under(items, None)
    }

    /// [`Policies::build`], for answers cached as `caching` says: a policy
    /// that reads what that cache does not key on (stored before the
    /// settings changed) cannot be evaluated safely, so it counts as one
    /// that does not parse.
    pub fn build_under<'a>(
        items: impl IntoIterator<Item = &'a Policy>,
        caching: Option<AnswerCaching>,
    ) -> Self {
        let mut out = Policies::default();
        for item in items {
            let Some(statement) = &item.statement else {
                continue;
            };
            out.len += 1;
            let named = Determining {
                policy_id: item.policy_id.to_string(),
                name: item.name.to_string(),
            };
            // Names are unique in the table; two under one name could not
            // both be named right in a decision.
            if out
                .ids
                .insert(item.name.to_string(), item.policy_id.to_string())
                .is_some()
            {
                out.broken.push(named);
                continue;
            }
            // Never parsed past the bound: Cedar's parser would overflow
            // the stack on it (see `statement_bounds`).
            if crate::policy::cedar::bounds::check(statement).is_err() {
                out.broken.push(named);
                continue;
            }
            let cedar_id = cedar_policy::PolicyId::new(item.name.as_str());
            let policy = match cedar_policy::Policy::parse(Some(cedar_id), statement) {
                Ok(policy) => policy,
                Err(_) => {
                    out.broken.push(named);
                    continue;
                }
            };
            let reads = Reads::of(&policy);
            if caching.is_some_and(|c| c.admits(reads).is_err()) {
                out.broken.push(named);
                continue;
            }
            if policy.effect() == cedar_policy::Effect::Permit {
                out.permits.push(policy.clone());
            }
            let scope = match confined_to(&policy) {
                None => &mut out.global,
                Some(tenant) => out.by_tenant.entry(tenant).or_default(),
            };
            if !scope.add(policy, reads) {
                out.broken.push(named);
            }
        }
        out
    }

    /// The permits that match on roles held, for the ceiling of writes
    /// that give roles.
    pub fn role_keyed(&self) -> &RoleKeyedPermits {
        self.role_keyed.get_or_init(|| {
            let mut found = RoleKeyedPermits::default();
            for policy in &self.permits {
                let keys = Keys::of(policy);
                if !keys.roles {
                    continue;
                }
                // An action that is no permission is no route's: it gives
                // nothing a ceiling could hold back.
                if let Ok(confers) = confers_of(policy) {
                    found.push(RoleKeyedPermit {
                        tenant: confined_to(policy),
                        confers,
                        any_role: keys.any_role,
                        mentions: keys.mentions,
                    });
                }
            }
            found
        })
    }

    /// How many policies with a statement the set holds.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The tenant's own policies, if it has any.
    fn own(&self, tenant: Option<&TenantId>) -> Option<&Scope> {
        tenant.and_then(|t| self.by_tenant.get(t))
    }

    /// Whether any policy could apply to a request on this tenant's
    /// resource (or a global one): when none can, the roles alone decide.
    pub fn apply_to(&self, tenant: Option<&TenantId>) -> bool {
        !self.broken.is_empty()
            || !self.global.is_empty()
            || self.own(tenant).is_some_and(|s| !s.is_empty())
    }

    fn named(&self, names: impl Iterator<Item = String>) -> Vec<Determining> {
        let mut out: Vec<Determining> = names
            .map(|name| Determining {
                policy_id: self.ids.get(&name).cloned().unwrap_or_default(),
                name,
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The decision for `action` on the standing's resource: an active
    /// user whose roles grant it (or for whom `self_rule` opens the route),
    /// or whom a `permit` lets through, and whom no `forbid` stops. `facts`
    /// is built only when a policy could apply.
    pub fn judge(
        &self,
        standing: &Standing<'_>,
        action: &str,
        self_rule: bool,
        facts: impl FnOnce() -> Facts,
    ) -> Judgement {
        let refuse = |reason| Judgement {
            allowed: false,
            reason,
            verdict: Verdict::NoMatch,
            permissions: Vec::new(),
            roles: Vec::new(),
        };
        let Some(user) = standing.user else {
            return refuse("unknown user");
        };
        if user.status != UserStatus::Active {
            return refuse("user not active");
        }
        let grant = standing.counted_grant();
        let tenant_permissions = grant.map_or(&[][..], |g| &g.effective_permissions);
        let now = crate::model::items::now_seconds();
        let global_permissions = user.global_permissions(now);
        let roles_allow = self_rule
            || any_grants(global_permissions, action)
            || (standing.tenant.is_some() && any_grants(tenant_permissions, action));
        let mut permissions: Vec<Permission> = tenant_permissions
            .iter()
            .chain(global_permissions)
            .cloned()
            .collect();
        permissions.sort();
        permissions.dedup();
        let roles: Vec<RoleId> = grant
            .iter()
            .flat_map(|g| g.roles.iter())
            .chain(user.global_roles(now))
            .copied()
            .collect();
        // Break glass: a holder of `*` everywhere manages policies whatever
        // the policies say, so no policy (a `forbid` of everything, one
        // that always fails) can lock the platform out of fixing them.
        let break_glass = action.starts_with(POLICY_ACTIONS)
            && global_permissions.iter().any(|p| p.as_str() == "*");
        let verdict = if !break_glass {
            let subject = Subject {
                user,
                tenant: standing.tenant,
                roles: &roles,
                permissions: &permissions,
            };
            self.decide(&subject, action, facts)
        } else {
            Verdict::NoMatch
        };
        let allowed = verdict.allows(roles_allow);
        let reason = match &verdict {
            _ if allowed => "permitted",
            Verdict::Forbid(_) => "forbidden by policy",
            Verdict::Error { .. } => "policy evaluation error",
            _ if standing.grant.is_some() && grant.is_none() => {
                if standing.grant.is_some_and(|g| g.expired_at(now)) {
                    "grant expired"
                } else {
                    "tenant deleted or being deleted"
                }
            }
            _ if user.roles_ended_at(now) && any_grants(&user.effective_permissions, action) => {
                "global roles expired"
            }
            _ => "permission not granted",
        };
        Judgement {
            allowed,
            reason,
            verdict,
            permissions,
            roles,
        }
    }

    /// The slices that can apply to `action` on the tenant's resource (or
    /// a global one).
    fn slices<'s>(&'s self, tenant: Option<&TenantId>, action: &str) -> Vec<&'s Slice> {
        self.global
            .for_action(action)
            .chain(
                self.own(tenant)
                    .into_iter()
                    .flat_map(|s| s.for_action(action)),
            )
            .collect()
    }

    /// What the policies say about `subject` doing `action` with the facts
    /// `facts` builds (only when a policy can apply).
    pub fn decide(
        &self,
        subject: &Subject<'_>,
        action: &str,
        facts: impl FnOnce() -> Facts,
    ) -> Verdict {
        if !self.broken.is_empty() {
            return Verdict::Error {
                policies: self.broken.clone(),
                message: "a stored policy cannot be evaluated safely: its statement does not \
                          parse, or it reads what the answer cache does not key on"
                    .into(),
            };
        }
        let slices = self.slices(subject.tenant.map(|(t, _)| t), action);
        if slices.is_empty() {
            return Verdict::NoMatch;
        }
        let reads = slices
            .iter()
            .fold(Reads::default(), |r, s| r.union(s.reads));
        let (request, built) = match self.request(subject, action, &facts(), reads) {
            Ok(r) => r,
            Err(message) => {
                return Verdict::Error {
                    policies: Vec::new(),
                    message,
                }
            }
        };
        // One set's answer is Allow if a permit matched and no forbid did,
        // with the matching permits (or forbids) as its reasons: across
        // the slices, a forbid anywhere wins, then a permit anywhere.
        let (mut errors, mut permits, mut forbids) = (Vec::new(), Vec::new(), Vec::new());
        for slice in slices {
            let response = cedar_authorizer().is_authorized(&request, &slice.set, &built.entities);
            let diagnostics = response.diagnostics();
            errors.extend(diagnostics.errors().map(|e| match e {
                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                    (e.policy_id().to_string(), e.to_string())
                }
            }));
            let reasons = diagnostics.reason().map(|id| id.to_string());
            match response.decision() {
                cedar_policy::Decision::Allow => permits.extend(reasons),
                cedar_policy::Decision::Deny => forbids.extend(reasons),
            }
        }
        if !errors.is_empty() {
            errors.sort();
            errors.dedup();
            return Verdict::Error {
                message: errors
                    .iter()
                    .map(|(_, m)| m.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
                policies: self.named(errors.into_iter().map(|(id, _)| id)),
            };
        }
        if !forbids.is_empty() {
            Verdict::Forbid(self.named(forbids.into_iter()))
        } else if !permits.is_empty() {
            Verdict::Permit(self.named(permits.into_iter()))
        } else {
            Verdict::NoMatch
        }
    }

    /// The Cedar request for `subject` doing `action`, with the entities
    /// it is decided over.
    fn request(
        &self,
        subject: &Subject<'_>,
        action: &str,
        facts: &Facts,
        reads: Reads,
    ) -> Result<(Request, std::sync::Arc<Built>), String> {
        let built = self.memo.get(subject)?;
        let request = Request::new(
            built.principal.clone(),
            uid("Action", action),
            built.resource.clone(),
            facts.context(reads)?,
            None,
        )
        .map_err(|e| e.to_string())?;
        Ok((request, built))
    }
}

/// The policy set as one instance keeps it: loaded on first use, refreshed
/// in the background once it is older than `refresh` (the decision that
/// notices uses the set in hand and starts one reload), and no longer used
/// once a reload has failed for `5 × refresh`: decisions then wait for a
/// reload and fail with its error (never an Allow on a set that old).
///
/// A reload reads the set's counts (`items::PolicyCounts`, one consistent
/// GetItem) and reads the policies only when the counts' version has moved
/// since the set in hand was read, and there is a statement to read. An
/// instance's first set may come from counts read with the caller's
/// standing ([`PolicyCache::first`]).
#[derive(Clone)]
pub struct PolicyCache {
    inner: std::sync::Arc<CacheInner>,
}

impl std::fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyCache")
            .field("version", &self.current().map(|held| held.version))
            .finish_non_exhaustive()
    }
}

/// A set as loaded: when its read started, and the version of the counts
/// it was read under (`None`: a table without them).
#[derive(Clone)]
struct Loaded {
    set: std::sync::Arc<Policies>,
    at: std::time::Instant,
    version: Option<u64>,
}

struct CacheInner {
    refresh: std::time::Duration,
    caching: AnswerCaching,
    loaded: std::sync::RwLock<Option<Loaded>>,
    /// Held by the one reload under way.
    reloading: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Reads of the policies (first loads included): `make bench` counts
    /// them.
    loads: std::sync::atomic::AtomicU64,
}

/// How many refresh intervals a set is used for without a good reload.
pub const STALE_REFRESHES: u32 = 5;

impl PolicyCache {
    /// Reloads every `refresh`; policies are built for answers cached as
    /// `caching` says ([`Policies::build_under`]).
    pub fn new(refresh: std::time::Duration, caching: AnswerCaching) -> Self {
        Self {
            inner: std::sync::Arc::new(CacheInner {
                refresh,
                caching,
                loaded: Default::default(),
                reloading: Default::default(),
                loads: Default::default(),
            }),
        }
    }

    /// How many times the policies were read from the table (reads of the
    /// counts alone not included).
    pub fn loads(&self) -> u64 {
        self.inner.loads.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn current(&self) -> Option<Loaded> {
        self.inner
            .loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn keep(&self, loaded: Loaded) -> std::sync::Arc<Policies> {
        let set = loaded.set.clone();
        *self.inner.loaded.write().unwrap_or_else(|e| e.into_inner()) = Some(loaded);
        set
    }

    /// Whether no set has been loaded yet (an instance's first decision).
    pub fn is_empty(&self) -> bool {
        self.current().is_none()
    }

    /// An instance's first set, from the counts read (eventually
    /// consistent) with the caller's standing when that read started at
    /// `at`: with no statement in the set, the empty set and nothing more
    /// read; else the policies are read. A set loaded meanwhile is used as
    /// it is. Counts a moment stale are caught by the next refresh, whose
    /// consistent read finds their version moved.
    pub async fn first(
        &self,
        store: &crate::Store,
        counts: Option<&PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        if let Some(loaded) = self.current() {
            return Ok(loaded.set);
        }
        let _guard = self.reload_lock().await?;
        if let Some(loaded) = self.current() {
            return Ok(loaded.set);
        }
        self.load(store, counts.cloned(), at).await
    }

    /// The set as of now: [`PolicyCache::as_of`] the counts read
    /// consistently now.
    pub async fn fresh(&self, store: &crate::Store) -> crate::Result<std::sync::Arc<Policies>> {
        let at = std::time::Instant::now();
        let counts = store.policy_counts(true).await?;
        self.as_of(store, counts.as_ref(), at).await
    }

    /// The set as of `counts`, which the caller read (consistently,
    /// starting at `at`) for the question it answers: the set in hand if it
    /// was read under these counts or newer ones, else read now. So each
    /// answer sees every policy write its read of the counts saw, and an
    /// unchanged set costs that one read. Without counts (a table from
    /// before them) the set is read every time, by each caller at once.
    pub async fn as_of(
        &self,
        store: &crate::Store,
        counts: Option<&PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        let held = || {
            self.current().filter(
                |held| matches!((held.version, counts), (Some(v), Some(c)) if v >= c.stamp.version),
            )
        };
        if counts.is_none() {
            return self.load(store, None, at).await;
        }
        if let Some(held) = held() {
            return Ok(held.set);
        }
        let _guard = self.reload_lock().await?;
        if let Some(held) = held() {
            return Ok(held.set);
        }
        self.load(store, counts.cloned(), at).await
    }

    async fn reload_lock(&self) -> crate::Result<tokio::sync::MutexGuard<'_, ()>> {
        tokio::time::timeout(RELOAD_TIMEOUT, self.inner.reloading.lock())
            .await
            .map_err(|_| crate::Error::Retryable {
                message: "the policy set's reload is taking too long".into(),
            })
    }

    /// The set to decide with.
    pub async fn get(&self, store: &crate::Store) -> crate::Result<std::sync::Arc<Policies>> {
        if let Some(loaded) = self.current() {
            let age = loaded.at.elapsed();
            if age < self.inner.refresh {
                return Ok(loaded.set);
            }
            if age < self.inner.refresh * STALE_REFRESHES {
                if let Ok(guard) = self.inner.reloading.clone().try_lock_owned() {
                    let (this, store) = (self.clone(), store.clone());
                    tokio::spawn(async move {
                        let _guard = guard;
                        if let Err(e) = this.reload(&store).await {
                            tracing::warn!(error = %e, "policy refresh failed; using the last good set");
                        }
                    });
                }
                return Ok(loaded.set);
            }
        }
        let _guard = self.reload_lock().await?;
        // Another caller may have reloaded while this one waited.
        if let Some(loaded) = self.current() {
            if loaded.at.elapsed() < self.inner.refresh {
                return Ok(loaded.set);
            }
        }
        self.reload(store).await
    }

    /// Reads the counts (consistently) and, if their version has moved
    /// since the set in hand was read, the set.
    async fn reload(&self, store: &crate::Store) -> crate::Result<std::sync::Arc<Policies>> {
        // Its age counts from when the read started.
        let at = std::time::Instant::now();
        let counts = tokio::time::timeout(RELOAD_TIMEOUT, store.policy_counts(true))
            .await
            .map_err(|_| timed_out())??;
        let version = counts.as_ref().map(|c| c.stamp.version);
        if let Some(held) = self.current() {
            if version.is_some() && held.version == version {
                return Ok(self.keep(Loaded { at, ..held }));
            }
        }
        self.load(store, counts, at).await
    }

    /// The set as of `counts` (read before it, at `at`): empty when they
    /// count no statement, else read. Policies read after counts of
    /// version v are at least as new as v, so a set kept as of v is never
    /// older than v says.
    async fn load(
        &self,
        store: &crate::Store,
        counts: Option<PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        let set = match &counts {
            Some(counts) if counts.none_stated() => Policies::default(),
            _ => {
                self.inner
                    .loads
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let items = tokio::time::timeout(RELOAD_TIMEOUT, store.all_policies())
                    .await
                    .map_err(|_| timed_out())??;
                Policies::build_under(&items, Some(self.inner.caching))
            }
        };
        if !set.broken.is_empty() {
            metrics::counter!(crate::runtime::metrics::name::REJECTED_STATEMENTS)
                .increment(set.broken.len() as u64);
            let names: Vec<&str> = set.broken.iter().map(|d| d.name.as_str()).collect();
            tracing::error!(
                policies = ?names,
                "stored Cedar statements cannot be used (they do not parse, are too deep, \
                 or read what the answer cache does not key on)"
            );
            // A set that worked is kept (as read now, so it is not stale)
            // under its old version, so the next refresh reads the set
            // again; only an instance with no good set decides with the
            // broken one, which denies.
            if let Some(good) = self.current().filter(|held| held.set.broken.is_empty()) {
                return Ok(self.keep(Loaded { at, ..good }));
            }
        }
        Ok(self.keep(Loaded {
            set: std::sync::Arc::new(set),
            at,
            version: counts.map(|c| c.stamp.version),
        }))
    }
}

fn timed_out() -> crate::Error {
    crate::Error::Retryable {
        message: "reading the policy set timed out".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::items::{now, Stamp};
    use crate::model::values::{Email, PolicyName, TenantName, UserId};

    const SHIPPED_SCHEMA: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../route_rules/schema.cedarschema"
    ));
    const SHIPPED_RULES: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../route_rules/provisioning.json"
    ));

    fn schema() -> PolicySchema {
        PolicySchema::new(
            SHIPPED_SCHEMA,
            &crate::policy::route_rules::parse(SHIPPED_RULES).unwrap(),
        )
        .unwrap()
    }

    fn id() -> PolicyId {
        PolicyId::generate()
    }

    /// What the ceiling reads of a statement: the roles and strings a
    /// permit matches the roles held on, whether it matches them some
    /// other way or where holding less can match, and what delegates set
    /// that it reads.
    #[test]
    fn what_a_policy_matches_on_is_found() {
        let r1 = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C";
        type Found = (bool, bool, bool, Vec<String>, Vec<&'static str>);
        let keys = |text: &str| -> Found {
            let k = Keys::of(&cedar_policy::Policy::parse(None, text).unwrap());
            let mentions: Vec<String> = k.mentions.into_iter().collect();
            let delegated: Vec<&str> = k.delegated.into_iter().collect();
            (k.roles, k.any_role, k.negated, mentions, delegated)
        };
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none: Found = (false, false, false, vec![], vec![]);
        assert_eq!(keys("permit(principal, action, resource);"), none);
        assert_eq!(
            keys(
                r#"permit(principal == User::"01J8YZZQ3V8PZKQ0ZKX4C2M7FM", action, resource) when { context.method == "GET" && principal.status == "active" && resource == Tenant::"01J8Z0E2Z8D2A3J7A7Y2H9GQ9C" };"#
            ),
            none,
            "literals that are no role or permission compared"
        );
        assert_eq!(
            keys(&format!(
                r#"permit(principal in Role::"{r1}", action, resource);"#
            )),
            (true, false, false, strings(&[r1]), vec![])
        );
        assert_eq!(
            keys(&format!(
                r#"permit(principal, action, resource) when {{ principal in [Role::"{r1}"] }};"#
            )),
            (true, false, false, strings(&[r1]), vec![])
        );
        assert_eq!(
            keys(
                r#"permit(principal, action, resource) when { principal.permissions.containsAll(["a:b", "c:*"]) || principal.roles.contains("x") };"#
            ),
            (true, false, false, strings(&["a:b", "c:*", "x"]), vec![])
        );
        assert_eq!(
            keys(
                r#"permit(principal, action, resource) when { principal.roles.containsAny(context.scope) };"#
            ),
            (true, true, false, vec![], vec![]),
            "compared with the request: any role"
        );
        assert_eq!(
            keys(
                r#"permit(principal, action, resource) when { {p: principal}.p.roles.contains("x") };"#
            ),
            (
                true,
                true,
                false,
                vec![],
                vec!["principal.email", "principal.emailDomain"]
            ),
            "the caller passed around whole: anything"
        );
        assert_eq!(
            keys(
                r#"permit(principal, action, resource) when { {"==": principal.email}["=="] == "ceo@x" && {"!": principal.roles}["!"].contains("r") };"#
            ),
            (true, true, true, vec![], vec!["principal.email"]),
            "record attributes named as operators are values"
        );
        // Where holding less can match.
        assert_eq!(
            keys(&format!(
                r#"permit(principal, action, resource) unless {{ principal in Role::"{r1}" }};"#
            )),
            (true, false, true, strings(&[r1]), vec![])
        );
        assert_eq!(
            keys(r#"permit(principal, action, resource) when { !principal.roles.contains("x") };"#),
            (true, false, true, strings(&["x"]), vec![])
        );
        for whole in [
            r#"permit(principal, action, resource) when { principal.permissions == ["a:b"] };"#,
            r#"permit(principal, action, resource) when { principal.roles.isEmpty() };"#,
            r#"permit(principal, action, resource) when { context.scope.containsAll(principal.roles) };"#,
        ] {
            assert_eq!(keys(whole), (true, true, true, vec![], vec![]), "{whole}");
        }
        assert_eq!(
            keys(
                r#"forbid(principal, action, resource) when { principal.emailDomain == "x" || resource.name like "a*" || principal has email && principal["email"] == "y" };"#
            ),
            (
                false,
                false,
                false,
                vec![],
                vec!["principal.email", "principal.emailDomain", "resource.name"]
            )
        );
    }

    fn item(name: &str, statement: &str) -> Policy {
        let at = now();
        Policy {
            policy_id: PolicyId::generate(),
            name: PolicyName::parse(name).unwrap(),
            description: None,
            statement: Some(statement.into()),
            tenant_id: None,
            stamp: Stamp::new(&at),
            updated_by: None,
        }
    }

    fn user() -> User {
        crate::testing::user_item(UserId::generate(), "ana@example.com", &[])
    }

    fn tenant(id: TenantId) -> Tenant {
        let at = now();
        Tenant {
            tenant_id: id,
            name: TenantName::parse("acme").unwrap(),
            status: Default::default(),
            stamp: Stamp::new(&at),
            updated_by: None,
        }
    }

    fn facts(ip: &str) -> Facts {
        Facts {
            source_ip: ip.into(),
            time: "2026-11-24T10:00:00Z".into(),
            method: "GET".into(),
            path: "/tenants/x".into(),
            route: "/tenants/{tenantId}".into(),
            ..Facts::default()
        }
    }

    #[test]
    fn actions_come_from_the_route_rules() {
        let schema = PolicySchema::new(
            SHIPPED_SCHEMA,
            &crate::policy::route_rules::parse(
                r#"{"routes":[{"method":"GET","resource":"/tenants/{tenantId}/tickets","permission":"ticket:read"}]}"#,
            )
            .unwrap(),
        )
        .unwrap();
        let ok = r#"forbid(principal, action == Action::"ticket:read", resource);"#;
        assert!(schema.check(&id(), ok).is_ok());
        let err = schema
            .check(
                &id(),
                r#"forbid(principal, action == Action::"member:read", resource);"#,
            )
            .unwrap_err();
        assert!(err.message.contains("member:read"), "{err}");
    }

    #[test]
    fn an_invalid_statement_names_its_line_and_column() {
        let schema = schema();
        let syntax = schema
            .check(
                &id(),
                "permit(principal, action, resource)\nwhen { principal.status == };",
            )
            .unwrap_err();
        assert_eq!((syntax.line, syntax.column), (2, 28), "{syntax}");
        let typed = schema
            .check(
                &id(),
                "permit(principal, action, resource)\n  when { principal.nickname == \"x\" };",
            )
            .unwrap_err();
        assert_eq!(typed.line, 2, "{typed}");
        assert!(typed.message.contains("nickname"), "{typed}");
    }

    #[test]
    fn the_check_finds_the_tenant_and_what_is_read() {
        let schema = schema();
        let t = TenantId::generate();
        let checked = schema
            .check(
                &id(),
                &format!(
                    r#"forbid(principal, action, resource in Tenant::"{t}")
                       unless {{ context.sourceIp.isInRange(ip("10.0.0.0/8")) }};"#
                ),
            )
            .unwrap();
        assert_eq!(checked.tenant, Some(t));
        assert_eq!(
            checked.reads,
            Reads {
                source_ip: true,
                ..Reads::default()
            }
        );
        let global = schema
            .check(
                &id(),
                r#"forbid(principal, action, resource) when { context has amr && context.time > datetime("2026-01-01") && context.route == "/x" };"#,
            )
            .unwrap();
        assert_eq!(global.tenant, None);
        assert_eq!(
            global.reads,
            Reads {
                source_ip: false,
                time: true,
                request_shape: true
            }
        );
    }

    #[test]
    fn a_policy_reading_the_ip_needs_a_cache_keyed_on_it() {
        let reads = Reads {
            source_ip: true,
            ..Reads::default()
        };
        let unkeyed = AnswerCaching {
            keyed_on_source_ip: false,
            result_ttl_seconds: 300,
        };
        let err = unkeyed.admits(reads).unwrap_err();
        assert!(err.contains("CacheKeyOnSourceIp") && err.contains("AuthorizerResultTtl"));
        assert!(AnswerCaching {
            keyed_on_source_ip: true,
            ..unkeyed
        }
        .admits(reads)
        .is_ok());
        assert!(AnswerCaching {
            result_ttl_seconds: 0,
            ..unkeyed
        }
        .admits(reads)
        .is_ok());
        assert!(unkeyed
            .admits(Reads {
                time: true,
                request_shape: true,
                ..Reads::default()
            })
            .is_ok());
    }

    /// The index hands Cedar only the policies that name the action (or
    /// none) and leaves the address and time out of the context when no
    /// such policy reads them: over policies of every action form, scope,
    /// effect and condition, every action and both tenants, the verdict is
    /// the one Cedar gives for the whole set with the whole context.
    #[test]
    fn the_action_index_decides_as_the_whole_set_does() {
        let (t, other) = (TenantId::generate(), TenantId::generate());
        let statements = [
            r#"permit(principal, action == Action::"tenant:read", resource);"#.to_string(),
            r#"forbid(principal, action in [Action::"tenant:read", Action::"member:write"], resource) unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#.to_string(),
            r#"permit(principal, action, resource) when { principal.emailDomain == "example.com" && context.time < datetime("2020-01-01") };"#.to_string(),
            r#"forbid(principal, action == Action::"member:read", resource) when { context.time > datetime("2020-01-01") && context.method == "DELETE" };"#.to_string(),
            r#"permit(principal, action in [Action::"member:read", Action::"member:write", Action::"member:read"], resource) when { context.path like "*/members*" };"#.to_string(),
            format!(r#"forbid(principal, action == Action::"member:write", resource in Tenant::"{t}") when {{ resource.name == "acme" }};"#),
            format!(r#"permit(principal, action, resource == Tenant::"{t}") when {{ context has sourceIp && context.sourceIp.isLoopback() }};"#),
            format!(r#"permit(principal, action == Action::"user:read", resource in Tenant::"{other}");"#),
            r#"permit(principal, action == Action::"role:read", resource) when { !(context has time) };"#.to_string(),
            r#"forbid(principal, action == Action::"user:delete", resource) when { context.nope == 1 };"#.to_string(),
        ];
        let items: Vec<Policy> = statements
            .iter()
            .enumerate()
            .map(|(i, s)| item(&format!("p-{i}"), s))
            .collect();
        let indexed = Policies::build(&items);
        let mut whole = PolicySet::new();
        for i in &items {
            let id = cedar_policy::PolicyId::new(i.name.as_str());
            whole
                .add(cedar_policy::Policy::parse(Some(id), i.statement.as_ref().unwrap()).unwrap())
                .unwrap();
        }
        let u = user();
        let (tenant_t, tenant_other) = (tenant(t), tenant(other));
        let actions: Vec<String> = schema().actions.iter().cloned().collect();
        let mut seen = std::collections::BTreeSet::new();
        for (tenant_id, tenant_item) in [(&t, &tenant_t), (&other, &tenant_other)] {
            for ip in ["10.1.2.3", "192.0.2.1", "127.0.0.1"] {
                for method in ["GET", "DELETE"] {
                    for action in &actions {
                        let subject = Subject {
                            user: &u,
                            tenant: Some((tenant_id, Some(tenant_item))),
                            roles: &[],
                            permissions: &[],
                        };
                        let facts = Facts {
                            method: method.into(),
                            path: format!("/tenants/{tenant_id}/members"),
                            ..facts(ip)
                        };
                        let got = indexed.decide(&subject, action, || facts.clone());
                        // The same entities, the whole context built here.
                        let built = Built::of(&subject).unwrap();
                        let context = Context::from_pairs([
                            ("sourceIp".to_string(), RestrictedExpression::new_ip(ip)),
                            (
                                "time".to_string(),
                                RestrictedExpression::new_datetime(&facts.time),
                            ),
                            (
                                "method".to_string(),
                                RestrictedExpression::new_string(method.into()),
                            ),
                            (
                                "path".to_string(),
                                RestrictedExpression::new_string(facts.path.clone()),
                            ),
                            (
                                "route".to_string(),
                                RestrictedExpression::new_string(facts.route.clone()),
                            ),
                        ])
                        .unwrap();
                        let request = Request::new(
                            built.principal.clone(),
                            uid("Action", action),
                            built.resource.clone(),
                            context,
                            None,
                        )
                        .unwrap();
                        let response =
                            cedar_authorizer().is_authorized(&request, &whole, &built.entities);
                        let errors: Vec<String> = response
                            .diagnostics()
                            .errors()
                            .map(|e| match e {
                                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                                    e.policy_id().to_string()
                                }
                            })
                            .collect();
                        let reasons =
                            indexed.named(response.diagnostics().reason().map(|r| r.to_string()));
                        let want = if !errors.is_empty() {
                            Verdict::Error {
                                policies: indexed.named(errors.into_iter()),
                                message: String::new(),
                            }
                        } else {
                            match response.decision() {
                                cedar_policy::Decision::Allow => Verdict::Permit(reasons),
                                cedar_policy::Decision::Deny if reasons.is_empty() => {
                                    Verdict::NoMatch
                                }
                                cedar_policy::Decision::Deny => Verdict::Forbid(reasons),
                            }
                        };
                        let got = match got {
                            Verdict::Error { policies, .. } => Verdict::Error {
                                policies,
                                message: String::new(),
                            },
                            v => v,
                        };
                        assert_eq!(got, want, "{action} on {tenant_id} from {ip} ({method})");
                        seen.insert(format!("{want:?}").split('(').next().unwrap().to_string());
                    }
                }
            }
        }
        // Every kind of verdict was among the cases.
        assert_eq!(seen.len(), 4, "{seen:?}");
    }

    /// A set remembers the entities it built per subject: a caller whose
    /// email, roles, permissions or tenant changed is decided on what they
    /// are now, never on what the set saw before.
    #[test]
    fn remembered_entities_follow_the_subject() {
        let t = TenantId::generate();
        let set = Policies::build([&item(
            "watch",
            r#"forbid(principal, action == Action::"tenant:read", resource is Tenant)
               when { principal.emailDomain == "evil.example" || principal.permissions.contains("x:y")
                      || principal in Role::"01J8Z0E2Z8D2A3J7A7Y2H9GQ9C" || resource.name == "gone" };"#,
        )]);
        let decide = |u: &User, tenant: &Tenant, roles: &[RoleId], permissions: &[Permission]| {
            let subject = Subject {
                user: u,
                tenant: Some((&t, Some(tenant))),
                roles,
                permissions,
            };
            set.decide(&subject, "tenant:read", || facts("10.0.0.1"))
        };
        let (u, acme) = (user(), tenant(t));
        assert_eq!(decide(&u, &acme, &[], &[]), Verdict::NoMatch);
        let moved = User {
            email: Email::parse("ana@evil.example").unwrap(),
            ..u.clone()
        };
        assert!(matches!(
            decide(&moved, &acme, &[], &[]),
            Verdict::Forbid(_)
        ));
        let x = [Permission::parse("x:y").unwrap()];
        assert!(matches!(decide(&u, &acme, &[], &x), Verdict::Forbid(_)));
        let role = [RoleId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").unwrap()];
        assert!(matches!(decide(&u, &acme, &role, &[]), Verdict::Forbid(_)));
        let renamed = Tenant {
            name: TenantName::parse("gone").unwrap(),
            ..acme.clone()
        };
        assert!(matches!(decide(&u, &renamed, &[], &[]), Verdict::Forbid(_)));
        // And back: nothing of the changed subjects stuck.
        assert_eq!(decide(&u, &acme, &[], &[]), Verdict::NoMatch);
    }

    #[test]
    fn forbid_beats_permit_and_an_error_denies() {
        let t = TenantId::generate();
        let tenant_item = tenant(t);
        let u = user();
        let subject = Subject {
            user: &u,
            tenant: Some((&t, Some(&tenant_item))),
            roles: &[],
            permissions: &[],
        };
        let permit = item(
            "open-reads",
            r#"permit(principal, action == Action::"tenant:read", resource);"#,
        );
        let forbid = item(
            "office-only",
            r#"forbid(principal, action, resource) unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#,
        );
        let only_permit = Policies::build([&permit]);
        assert!(matches!(
            only_permit.decide(&subject, "tenant:read", || facts("192.0.2.1")),
            Verdict::Permit(p) if p[0].name == "open-reads"
        ));
        assert_eq!(
            only_permit.decide(&subject, "tenant:update", || facts("192.0.2.1")),
            Verdict::NoMatch
        );
        let both = Policies::build([&permit, &forbid]);
        let outside = both.decide(&subject, "tenant:read", || facts("192.0.2.1"));
        assert!(!outside.allows(true));
        assert_eq!(outside.determining()[0].name, "office-only");
        assert!(both
            .decide(&subject, "tenant:read", || facts("10.1.2.3"))
            .allows(false));
        // A forbid that errors (a tenant with no item has no name) denies
        // even where the roles allow.
        let erring = item(
            "no-acme",
            r#"forbid(principal, action, resource is Tenant) when { resource.name == "acme" };"#,
        );
        let set = Policies::build([&erring]);
        let missing = Subject {
            tenant: Some((&t, None)),
            ..subject
        };
        let verdict = set.decide(&missing, "tenant:read", || facts("10.0.0.1"));
        assert!(
            matches!(&verdict, Verdict::Error { policies, .. } if policies[0].name == "no-acme")
        );
        assert!(!verdict.allows(true));
    }

    #[test]
    fn a_tenants_policy_does_not_touch_another_tenant() {
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let u = user();
        let forbid_a = item(
            "lock-a",
            &format!(r#"forbid(principal, action, resource in Tenant::"{a}");"#),
        );
        let set = Policies::build([&forbid_a]);
        let (ta, tb) = (tenant(a), tenant(b));
        let on = |t: &TenantId, item: &Tenant| {
            let subject = Subject {
                user: &u,
                tenant: Some((t, Some(item))),
                roles: &[],
                permissions: &[],
            };
            set.decide(&subject, "tenant:read", || facts("10.0.0.1"))
        };
        assert!(matches!(on(&a, &ta), Verdict::Forbid(_)));
        assert_eq!(on(&b, &tb), Verdict::NoMatch);
        assert!(set.apply_to(Some(&a)) && !set.apply_to(Some(&b)) && !set.apply_to(None));
    }

    #[test]
    fn ids_in_a_statement_must_be_written_as_requests_name_them() {
        let schema = schema();
        let t = TenantId::generate();
        let lower = t.to_string().to_lowercase();
        let err = schema
            .check(
                &id(),
                &format!("forbid(principal, action,\n  resource in Tenant::\"{lower}\");"),
            )
            .unwrap_err();
        assert_eq!((err.line, err.column), (2, 24), "{err}");
        assert!(err.message.contains(&t.to_string()), "{err}");
        let not_an_id = schema
            .check(
                &id(),
                r#"forbid(principal == User::"alice", action, resource);"#,
            )
            .unwrap_err();
        assert!(not_an_id.message.contains("not a user id"), "{not_an_id}");
        assert!(schema
            .check(
                &id(),
                &format!(r#"forbid(principal, action, resource in Tenant::"{t}");"#)
            )
            .is_ok());
    }

    #[test]
    fn a_platform_admin_can_always_manage_policies() {
        let mut root = user();
        root.effective_permissions = vec![Permission::parse("*").unwrap()];
        let everything =
            Policies::build([&item("lock-out", "forbid(principal, action, resource);")]);
        let standing = Standing {
            user: Some(&root),
            tenant: None,
            grant: None,
        };
        let judge = |action| everything.judge(&standing, action, false, || facts("10.0.0.1"));
        assert!(judge("policy:delete").allowed);
        assert!(judge("policy:update").allowed);
        let other = judge("user:read");
        assert!(!other.allowed);
        assert_eq!(other.reason, "forbidden by policy");
        // Not for anyone else.
        let mut delegate = user();
        delegate.effective_permissions = vec![Permission::parse("policy:*").unwrap()];
        let standing = Standing {
            user: Some(&delegate),
            ..standing
        };
        assert!(
            !everything
                .judge(&standing, "policy:delete", false, || facts("10.0.0.1"))
                .allowed
        );
    }

    #[test]
    fn a_stored_policy_the_answer_cache_cannot_honour_denies() {
        let office = item(
            "office",
            r#"forbid(principal, action, resource) unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#,
        );
        let u = user();
        let standing = Standing {
            user: Some(&u),
            tenant: None,
            grant: None,
        };
        let unkeyed = AnswerCaching {
            keyed_on_source_ip: false,
            result_ttl_seconds: 300,
        };
        let keyed = AnswerCaching {
            keyed_on_source_ip: true,
            ..unkeyed
        };
        let judged = Policies::build_under([&office], Some(unkeyed)).judge(
            &standing,
            "user:read",
            true,
            || facts("10.0.0.1"),
        );
        assert!(!judged.allowed);
        assert_eq!(judged.reason, "policy evaluation error");
        assert!(
            Policies::build_under([&office], Some(keyed))
                .judge(&standing, "user:read", true, || facts("10.0.0.1"))
                .allowed
        );
    }

    /// The deepest statements the bound lets through, of every shape
    /// Cedar recurses on, are checked, built into a set and decided on a
    /// 2 MiB stack (a Tokio worker's) in this (debug) build, where Cedar
    /// needs the most stack; one level deeper is refused on write and
    /// never parsed from the table.
    #[test]
    fn statements_at_the_depth_bound_run_on_a_small_stack() {
        let shapes: [fn(usize) -> String; 7] = [
            |n| format!("{}true{}", "(".repeat(n), ")".repeat(n)),
            |n| vec!["context.method == \"GET\""; n].join(" || "),
            |n| format!("{}true", "!".repeat(n)),
            |n| format!("{}1 == 1", "-".repeat(n)),
            |n| format!("{}1{}.contains(1)", "[".repeat(n), "]".repeat(n)),
            |n| {
                format!(
                    "{}true{}",
                    "if true then ".repeat(n),
                    " else false".repeat(n)
                )
            },
            |n| format!("{}\"x\"{} == 1", "{a: ".repeat(n), "}.a".repeat(n)),
        ];
        let statement =
            |body: String| format!("forbid(principal, action, resource) when {{ {body} }};");
        let mut deepest = Vec::new();
        for shape in shapes {
            let n = (1..)
                .find(|&n| crate::policy::cedar::bounds::check(&statement(shape(n))).is_err())
                .unwrap()
                - 1;
            assert!(n >= 1);
            deepest.push(statement(shape(n)));
            let too_deep = statement(shape(n + 1));
            let refused = schema().check(&id(), &too_deep).unwrap_err();
            assert!(refused.message.contains("nests too deeply"), "{refused}");
            let set = Policies::build([&item("deep", &too_deep)]);
            assert_eq!(set.broken.len(), 1, "never parsed from the table");
        }
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                let schema = schema();
                let u = user();
                for text in &deepest {
                    // Some shapes are not valid Cedar (the schema has no
                    // such attribute); what matters is that nothing
                    // overflows on the way to the answer.
                    let _ = schema.check(&id(), text);
                    let set = Policies::build([&item("deep", text)]);
                    let subject = Subject {
                        user: &u,
                        tenant: None,
                        roles: &[],
                        permissions: &[],
                    };
                    let _ = set.decide(&subject, "user:read", || facts("10.0.0.1"));
                }
            })
            .unwrap()
            .join()
            .expect("no stack overflow at the bound");
    }

    /// `context.path` has one spelling: ids in upper case, segments
    /// decoded. A statement comparing it with another spelling would
    /// never match, so it is refused with the spelling to use.
    #[test]
    fn context_path_has_one_spelling() {
        let t = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C";
        let lower = t.to_lowercase();
        assert_eq!(
            Facts::canonical_path(&format!("/tenants/{lower}/docs/%73ecret")),
            format!("/tenants/{t}/docs/secret")
        );
        assert_eq!(
            Facts::canonical_path("/users/not-a-ulid/x%FF"),
            "/users/not-a-ulid/x%FF",
            "a segment that does not decode to UTF-8 stays as sent"
        );
        let check = |body: &str| {
            schema().check(
                &id(),
                &format!("forbid(principal, action, resource) when {{ {body} }};"),
            )
        };
        for refused in [
            format!(r#"context.path == "/tenants/{lower}/members""#),
            format!(r#"context.path like "/tenants/{lower}/*""#),
            r#"context.path like "/docs/%73ecret*""#.to_string(),
            format!(r#"["/tenants/{lower}"].contains(context.path)"#),
        ] {
            let err = check(&refused).unwrap_err();
            assert!(err.message.contains("never match"), "{refused}: {err}");
        }
        assert!(check(&format!(r#"context.path like "/tenants/{t}/*""#)).is_ok());
        // Paths compared with something else are not context.path's business.
        assert!(check(r#"context.route == "/tenants/{tenantId}""#).is_ok());
    }

    #[test]
    fn a_statement_that_no_longer_parses_denies_everything() {
        let u = user();
        let set = Policies::build([&item("broken", "forbid(principal, action")]);
        let subject = Subject {
            user: &u,
            tenant: None,
            roles: &[],
            permissions: &[],
        };
        let verdict = set.decide(&subject, "user:read", || facts("10.0.0.1"));
        assert!(
            matches!(&verdict, Verdict::Error { policies, .. } if policies[0].name == "broken")
        );
        // Two policies under one name (the table refuses it; an import
        // might not) in different slices: neither could be named right.
        let set = Policies::build([
            &item(
                "twice",
                r#"permit(principal, action == Action::"user:read", resource);"#,
            ),
            &item(
                "twice",
                r#"forbid(principal, action == Action::"user:delete", resource);"#,
            ),
        ]);
        let verdict = set.decide(&subject, "user:read", || facts("10.0.0.1"));
        assert!(
            matches!(&verdict, Verdict::Error { policies, .. } if policies[0].name == "twice"),
            "{verdict:?}"
        );
    }
}
