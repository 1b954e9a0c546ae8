//! What a Cedar statement says, read from its text and Cedar's JSON form
//! (EST): what it reads of the request (`Reads`), what it matches the
//! caller and tenant on (`Keys`), what a `permit` gives, the tenant it is
//! confined to, and whether the ids and paths in it are spelled as
//! requests spell them. Errors carry the line and column they point at.

use std::collections::BTreeSet;

use cedar_policy::{EntityUid, ResourceConstraint};
use miette::Diagnostic;

use super::entities::Facts;
use crate::model::values::{Permission, RoleId, TenantId};

/// A statement Cedar rejected, and where: 1-based line and column of the
/// first problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct StatementError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a policy matches the caller or the tenant on that an admin of the
/// system can change, and so could give a `permit`'s actions by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Keys {
    /// It reads the roles held (`principal in Role::"..."`,
    /// `principal.roles`, `principal.permissions`): giving a role can make
    /// it match.
    pub(super) roles: bool,
    /// It compares them with something other than literals (or reads them
    /// whole, or reaches the caller some other way): any role given can
    /// make it match.
    pub(super) any_role: bool,
    /// It reads them where holding less can make it match (under `!`,
    /// `unless`, an `if`, `!=`, `==`, `isEmpty`): removing a role, which
    /// is never limited, could give it.
    pub(super) negated: bool,
    /// The role ids and the literal strings it compares the roles and
    /// permissions held with (`roles.contains("...")`,
    /// `permissions.containsAny([...])`).
    pub(super) mentions: BTreeSet<String>,
    /// The user ids it names (`principal == User::"..."`): linking an
    /// identity to one of them, or making them active again, gives its
    /// actions to whoever controls them.
    pub(super) users: BTreeSet<String>,
    /// Attributes it reads that a delegate sets directly: a user's email
    /// (`user:update`) and a tenant's name (`tenant:update` in that
    /// tenant).
    pub(super) delegated: BTreeSet<&'static str>,
}

impl Keys {
    /// From a policy's JSON form (Cedar's EST).
    pub(super) fn of(policy: &cedar_policy::Policy) -> Keys {
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

    pub(super) fn worst(&mut self) {
        (self.roles, self.any_role, self.negated) = (true, true, true);
        self.delegated
            .extend(["principal.email", "principal.emailDomain", "resource.name"]);
    }

    /// A read of the roles held, positive or not.
    pub(super) fn role_read(&mut self, negative: bool) {
        self.roles = true;
        self.negated |= negative;
    }

    /// `principal.roles` or `principal.permissions`.
    pub(super) fn held_set(value: &serde_json::Value) -> bool {
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
    pub(super) fn var(value: Option<&serde_json::Value>) -> Option<&str> {
        value.and_then(|v| v.get("Var")).and_then(|v| v.as_str())
    }

    /// The strings of a literal string or set of them.
    pub(super) fn literals(value: &serde_json::Value) -> Option<Vec<String>> {
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
    pub(super) fn walk(&mut self, value: &serde_json::Value, negative: bool) {
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
        if let (Some("User"), Some(id)) = (
            map.get("type").and_then(|t| t.as_str()),
            map.get("id").and_then(|i| i.as_str()),
        ) {
            self.users.insert(id.to_string());
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

/// What a `permit` can give: the actions it names (`*` when it names
/// none). A `forbid` gives nothing.
pub(super) fn gives_of(policy: &cedar_policy::Policy) -> Result<Vec<Permission>, StatementError> {
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

impl StatementError {
    /// The position of the diagnostic's first label (1, 1 without one).
    pub(super) fn at(text: &str, diagnostic: &dyn Diagnostic, message: String) -> Self {
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
    pub(super) fn at_offset(text: &str, offset: usize, message: String) -> Self {
        let before = text.get(..offset).unwrap_or("");
        Self {
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
            message: plain(&message),
        }
    }
}

/// Cedar's message without what means nothing to the author: the id the
/// statement was checked under (`for policy `...`, `), which no stored
/// policy may have yet, and Cedar's internal name for an entity of any
/// type.
fn plain(message: &str) -> String {
    const FOR_POLICY: &str = "for policy `";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(FOR_POLICY) {
        out.push_str(&rest[..at]);
        let after = &rest[at + FOR_POLICY.len()..];
        rest = match after.find('`') {
            Some(end) => {
                let tail = &after[end + 1..];
                tail.strip_prefix(", ").unwrap_or(tail)
            }
            None => after,
        };
    }
    out.push_str(rest);
    out.replace(" ()", "")
        .replace("__cedar::internal::AnyEntity", "an entity of any type")
}

/// Refuses a `Tenant`, `User` or `Role` id that is not a ULID in its
/// canonical (upper-case) spelling: requests name them that way, so a
/// policy naming `Tenant::"01j..."` would never match anything.
pub(super) fn canonical_ids(
    statement: &str,
    policy: &cedar_policy::Policy,
) -> Result<(), StatementError> {
    pub(super) fn walk(value: &serde_json::Value, found: &mut Vec<(String, String)>) {
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
/// literal and `like` pattern counts when the statement reads
/// `context.path`, each piece between a `/` or a `*` on its own, so an id
/// or an escape is found whether it fills a segment, touches a wildcard or
/// stands alone. (A lower-case *part* of an id cannot be told from a word:
/// the policy docs say to write ids in upper case.)
pub(super) fn canonical_paths(
    statement: &str,
    policy: &cedar_policy::Policy,
) -> Result<(), StatementError> {
    pub(super) fn walk(
        value: &serde_json::Value,
        reads_path: &mut bool,
        literals: &mut Vec<String>,
    ) {
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
    for literal in &literals {
        let canonical = literal
            .split('*')
            .map(Facts::canonical_path)
            .collect::<Vec<_>>()
            .join("*");
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
pub(super) fn action_permission(action: &EntityUid) -> Result<Permission, StatementError> {
    Permission::parse(action.id().unescaped()).map_err(|e| StatementError {
        line: 1,
        column: 1,
        message: format!("{action} is not a permission: {e}"),
    })
}

/// The tenant a policy's resource scope confines it to.
/// Whether `policy` is a `permit` that matches on the roles held or names
/// a user: every write that gives a role, links an identity to a user or
/// makes one active again must see it, so no tenant's own set takes one.
pub(super) fn role_keyed(policy: &cedar_policy::Policy) -> bool {
    policy.effect() == cedar_policy::Effect::Permit && {
        let keys = Keys::of(policy);
        keys.roles || !keys.users.is_empty()
    }
}

/// Whether `policy` is a `permit` that matches on the roles held: what a
/// tenant's own set never held (one naming a user, written before such
/// permits were kept out of tenants' sets, still loads there).
pub(super) fn matches_on_roles(policy: &cedar_policy::Policy) -> bool {
    policy.effect() == cedar_policy::Effect::Permit && Keys::of(policy).roles
}

pub(super) fn confined_to(policy: &cedar_policy::Policy) -> Option<TenantId> {
    let target = match policy.resource_constraint() {
        ResourceConstraint::In(u) | ResourceConstraint::Eq(u) | ResourceConstraint::IsIn(_, u) => u,
        ResourceConstraint::Any | ResourceConstraint::Is(_) => return None,
    };
    (target.type_name().to_string() == "Tenant")
        .then(|| TenantId::parse(target.id().unescaped()).ok())
        .flatten()
}
