//! Route rules as data, as the deployment ships them (`route_rules/*.json`):
//! which permission a method + resource template needs, whether the route
//! is tenant-scoped (`{tenantId}` in the template), and whether a caller
//! may use it on themselves without the permission (`"self": "userId"`:
//! when that path parameter is the caller's own id; `"self": "invitee"`:
//! any active caller, the backend checks that the invitation is theirs;
//! `"self": "caller"`: any active caller, the backend acts for, or answers
//! about, the caller alone; `"self": "signup"`: the sign-up route;
//! `"self": "directory"`: a tenant's SCIM routes, for that tenant's
//! directory token and nobody else).
//! The authorizer decides with them; the Cedar schema takes its actions
//! from them.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::model::values::{Permission, UserId};

/// The path parameter that makes a route tenant-scoped.
pub const TENANT_PARAM: &str = "tenantId";

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "*",
];

/// The `self` keyword for routes any active caller may use, whose backend
/// checks that the invitation named is theirs.
pub const INVITEE: &str = "invitee";

/// The `self` keyword for routes any active caller may use, whose backend
/// acts for, or answers about, the caller alone (`GET /users/me`), or
/// checks what more than that needs (`POST /authorize` about another user).
pub const CALLER: &str = "caller";

/// The `self` keyword for the sign-up route: the holder of a valid token
/// whose identity is linked to nobody, from an issuer open to sign-up.
pub const SIGN_UP: &str = "signup";

/// The `self` keyword for a tenant's SCIM routes: only a bearer token of
/// that tenant's directory may use them; no user, whatever they hold.
pub const DIRECTORY: &str = "directory";

/// Who may use a rule's route on themselves without its permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelfRule {
    /// The caller whose user id is this path parameter.
    Param(String),
    /// Any active caller; the backend checks the invitation is theirs.
    Invitee,
    /// Any active caller; the backend acts for, or answers about, the
    /// caller alone (see [`CALLER`]).
    Caller,
    /// Someone who is no user yet, signing up (see [`SIGN_UP`]); nobody
    /// who is one.
    SignUp,
    /// The tenant's directory (see [`DIRECTORY`]); no user.
    Directory,
}

/// One rule: `method` (or `*`) on `resource` needs `permission`, unless
/// its self rule lets the caller through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub method: String,
    pub resource: String,
    pub permission: Permission,
    pub self_rule: Option<SelfRule>,
    /// What the permission lets its holder do, in words (the file's
    /// `permissions` object), for the people who give it.
    pub description: Option<std::sync::Arc<str>>,
    /// Whether `resource` has a `{tenantId}` segment (found once: every
    /// decision asks it of every rule).
    tenant_scoped: bool,
}

impl Rule {
    /// Whether this request is the caller acting on themselves through a
    /// self rule: its parameter parses as a user id equal to `caller`, or
    /// the route is an invitee's or any caller's.
    pub fn is_self(&self, caller: &UserId, params: &HashMap<String, String>) -> bool {
        match &self.self_rule {
            None | Some(SelfRule::SignUp | SelfRule::Directory) => false,
            Some(SelfRule::Invitee | SelfRule::Caller) => true,
            Some(SelfRule::Param(name)) => params
                .get(name)
                .and_then(|value| UserId::parse(value).ok())
                .is_some_and(|id| id == *caller),
        }
    }

    pub fn is_tenant_scoped(&self) -> bool {
        self.tenant_scoped
    }
}

/// The rules file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("route rules: {0}")]
pub struct RulesError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    method: String,
    resource: String,
    permission: String,
    #[serde(default, rename = "self")]
    self_param: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    /// A description of each permission, in words.
    #[serde(default)]
    permissions: std::collections::BTreeMap<String, String>,
    routes: Vec<RawRule>,
}

/// Most characters of a permission's description.
pub const DESCRIPTION_MAX: usize = 200;

/// Parses and checks a rules file: known methods, resource templates that
/// start with `/` and have well-formed `{param}` segments, concrete
/// permissions, no duplicates; each description (`permissions`) of a
/// permission a rule of the file needs, 1 to [`DESCRIPTION_MAX`]
/// characters.
pub fn parse(json: &str) -> Result<Vec<Rule>, RulesError> {
    let raw: RawRules = serde_json::from_str(json).map_err(|e| RulesError(e.to_string()))?;
    let mut descriptions: HashMap<String, std::sync::Arc<str>> = HashMap::new();
    for (permission, text) in &raw.permissions {
        let at = |msg: &str| RulesError(format!("permissions.{permission}: {msg}"));
        if !raw.routes.iter().any(|r| &r.permission == permission) {
            return Err(at("no route rule of this file needs it"));
        }
        let length = text.trim().chars().count();
        if length == 0 || length > DESCRIPTION_MAX {
            return Err(at(&format!(
                "a description is 1 to {DESCRIPTION_MAX} characters"
            )));
        }
        descriptions.insert(permission.clone(), text.trim().into());
    }
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(raw.routes.len());
    for (i, r) in raw.routes.into_iter().enumerate() {
        let at = |msg: String| RulesError(format!("routes[{i}]: {msg}"));
        let method = r.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(at(format!("unknown method {:?}", r.method)));
        }
        check_resource(&r.resource).map_err(at)?;
        let permission = Permission::parse(&r.permission).map_err(|e| at(e.to_string()))?;
        if permission.is_wildcard() {
            return Err(at(
                "a required permission must be concrete, not a wildcard".into()
            ));
        }
        let self_rule = match r.self_param {
            None => None,
            Some(name) if name == INVITEE => Some(SelfRule::Invitee),
            Some(name) if name == CALLER => Some(SelfRule::Caller),
            Some(name) if name == SIGN_UP => Some(SelfRule::SignUp),
            Some(name) if name == DIRECTORY => {
                let tenant = format!("{{{TENANT_PARAM}}}");
                if !r.resource.split('/').any(|s| s == tenant) {
                    return Err(at(format!(
                        "self {DIRECTORY:?} needs a tenant route ({tenant} in {})",
                        r.resource
                    )));
                }
                Some(SelfRule::Directory)
            }
            Some(name) => {
                let in_template = r.resource.split('/').any(|s| s == format!("{{{name}}}"));
                if !in_template || name == TENANT_PARAM {
                    return Err(at(format!(
                        "self {name:?} must be {INVITEE:?}, {CALLER:?}, {SIGN_UP:?} or name a path parameter of {} other than {TENANT_PARAM}",
                        r.resource
                    )));
                }
                Some(SelfRule::Param(name))
            }
        };
        if !seen.insert((method.clone(), r.resource.clone())) {
            return Err(at(format!("duplicate rule for {method} {}", r.resource)));
        }
        let tenant_segment = format!("{{{TENANT_PARAM}}}");
        rules.push(Rule {
            method,
            tenant_scoped: r.resource.split('/').any(|s| s == tenant_segment),
            description: descriptions.get(permission.as_str()).cloned(),
            resource: r.resource,
            permission,
            self_rule,
        });
    }
    Ok(rules)
}

/// Reads and parses the rules files `paths` names: one path, or several
/// separated by commas (`/opt/provisioning.json,tickets.json`), a relative
/// one being in the first one's directory. Their rules are joined: the
/// provisioning API's and those of each API that shares the authorizer.
/// A route with rules in two files is refused, naming both.
pub fn load(paths: &str) -> Result<Vec<Rule>, RulesError> {
    let mut files = paths.split(',').map(str::trim);
    let first = std::path::PathBuf::from(files.next().unwrap_or_default());
    let dir = first
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let mut rules = Vec::new();
    // Which file each route's rule came from.
    let mut from: HashMap<(String, String), String> = HashMap::new();
    for path in std::iter::once(first.clone()).chain(files.map(|f| dir.join(f))) {
        let name = path.display().to_string();
        let text =
            std::fs::read_to_string(&path).map_err(|e| RulesError(format!("{name}: {e}")))?;
        for rule in parse(&text).map_err(|e| RulesError(format!("{name}: {}", e.0)))? {
            let route = (rule.method.clone(), rule.resource.clone());
            if let Some(other) = from.insert(route, name.clone()) {
                return Err(RulesError(format!(
                    "{} {} has rules in {other} and in {name}",
                    rule.method, rule.resource
                )));
            }
            rules.push(rule);
        }
    }
    Ok(rules)
}

fn check_resource(resource: &str) -> Result<(), String> {
    if !resource.starts_with('/') {
        return Err(format!("resource {resource:?} must start with '/'"));
    }
    for segment in resource.split('/').skip(1) {
        if segment.is_empty() && resource != "/" {
            return Err(format!("resource {resource:?} has an empty segment"));
        }
        let is_param = segment.starts_with('{') && segment.ends_with('}');
        if is_param {
            let name = &segment[1..segment.len() - 1];
            let name = name.strip_suffix('+').unwrap_or(name);
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "resource {resource:?} has a bad parameter {segment:?}"
                ));
            }
        } else if segment.contains(['{', '}', '*', '?']) {
            return Err(format!(
                "resource {resource:?} has a bad segment {segment:?}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(file: &str) -> String {
        format!("{}/../../route_rules/{file}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn several_files_join_their_rules_and_a_relative_one_sits_beside_the_first() {
        let provisioning = load(&shipped("provisioning.json")).unwrap();
        let both = load(&format!("{}, tickets.json", shipped("provisioning.json"))).unwrap();
        assert_eq!(both.len(), provisioning.len() + 2);
        let tickets = both
            .iter()
            .find(|r| r.resource == "/tenants/{tenantId}/tickets" && r.method == "POST")
            .expect("the tickets rule");
        assert_eq!(tickets.permission.as_str(), "ticket:create");
        assert!(tickets.is_tenant_scoped());
    }

    #[test]
    fn permissions_are_described_in_words_of_their_own_rules_only() {
        let rules = parse(
            r#"{"permissions": {"ticket:read": "  Read a tenant's tickets "},
                "routes": [
                {"method": "GET", "resource": "/tenants/{tenantId}/tickets", "permission": "ticket:read"},
                {"method": "POST", "resource": "/tenants/{tenantId}/tickets", "permission": "ticket:create"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            rules[0].description.as_deref(),
            Some("Read a tenant's tickets")
        );
        assert_eq!(rules[1].description, None);
        for (permissions, why) in [
            (
                r#"{"ticket:close": "Close tickets"}"#,
                "no route rule of this file needs it",
            ),
            (r#"{"ticket:read": " "}"#, "1 to 200 characters"),
        ] {
            let json = format!(
                r#"{{"permissions": {permissions}, "routes": [{{"method": "GET", "resource": "/t", "permission": "ticket:read"}}]}}"#
            );
            let e = parse(&json).unwrap_err().0;
            assert!(
                e.starts_with("permissions.ticket:") && e.contains(why),
                "{e}"
            );
        }
        let long = "x".repeat(DESCRIPTION_MAX + 1);
        let json = format!(
            r#"{{"permissions": {{"ticket:read": "{long}"}}, "routes": [{{"method": "GET", "resource": "/t", "permission": "ticket:read"}}]}}"#
        );
        assert!(parse(&json).is_err());
        // Every permission the shipped files need is described.
        let shipped = load(&format!("{}, tickets.json", shipped("provisioning.json"))).unwrap();
        let undescribed: Vec<_> = shipped
            .iter()
            .filter(|r| r.description.is_none())
            .map(|r| r.permission.as_str())
            .collect();
        assert!(undescribed.is_empty(), "{undescribed:?}");
    }

    #[test]
    fn the_self_keywords_parse() {
        let rules = parse(
            r#"{"routes": [
                {"method": "GET", "resource": "/users/me", "permission": "user:read", "self": "caller"},
                {"method": "POST", "resource": "/users/me", "permission": "user:signup", "self": "signup"},
                {"method": "POST", "resource": "/invitations/{id}/accept", "permission": "invitation:answer", "self": "invitee"},
                {"method": "GET", "resource": "/users/{userId}", "permission": "user:read", "self": "userId"}
            ]}"#,
        )
        .unwrap();
        let kinds: Vec<_> = rules.iter().map(|r| r.self_rule.clone()).collect();
        assert_eq!(
            kinds,
            [
                Some(SelfRule::Caller),
                Some(SelfRule::SignUp),
                Some(SelfRule::Invitee),
                Some(SelfRule::Param("userId".into())),
            ]
        );
        let anyone = UserId::generate();
        assert!(rules[0].is_self(&anyone, &HashMap::new()));
        assert!(!rules[1].is_self(&anyone, &HashMap::new()));
        let err = parse(
            r#"{"routes": [{"method": "GET", "resource": "/a", "permission": "a:b", "self": "me"}]}"#,
        )
        .unwrap_err();
        assert!(err.0.contains(r#""invitee", "caller", "signup""#), "{err}");
    }

    #[test]
    fn a_route_with_rules_in_two_files_is_refused_naming_both() {
        let dir = std::env::temp_dir().join(format!("route-rules-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let rule = r#"{"routes": [{"method": "GET", "resource": "/a", "permission": "a:read"}]}"#;
        std::fs::write(dir.join("one.json"), rule).unwrap();
        std::fs::write(dir.join("two.json"), rule).unwrap();
        let err = load(&format!("{},two.json", dir.join("one.json").display())).unwrap_err();
        assert!(err.0.contains("GET /a has rules in"), "{err}");
        assert!(
            err.0.contains("one.json") && err.0.contains("two.json"),
            "{err}"
        );
        let missing = load(&format!("{},absent.json", dir.join("one.json").display())).unwrap_err();
        assert!(missing.0.contains("absent.json"), "{missing}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
