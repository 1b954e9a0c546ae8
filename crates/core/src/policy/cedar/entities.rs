//! The request as Cedar sees it: who is asking (`Subject`), the caller's
//! and tenant's entities (built once per set and caller, `EntityMemo`),
//! and the context (`Facts`, with `context.path` in its one spelling).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use cedar_policy::{
    Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, RestrictedExpression,
};

use super::reads::Reads;
use crate::model::items::{Tenant, User};
use crate::model::values::{Permission, RoleId, TenantId};

/// The id of the one `Platform` entity: the resource of global routes.
pub const PLATFORM: &str = "platform";

/// An entity uid. The type names are parsed once (parsing one runs
/// Cedar's parser: microseconds, on every decision otherwise).
pub(super) fn uid(type_name: &str, id: &str) -> EntityUid {
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
    /// The tenant's own policies, if it has any (see `Standing::own`).
    pub own: Option<&'a super::Policies>,
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
        crate::clock::rfc3339(crate::clock::now_seconds())
    }

    /// An RFC 3339 date-time as `context.time` holds it (whole seconds,
    /// UTC), or `None` if it is not one.
    pub fn time_from(rfc3339: &str) -> Option<String> {
        let millis = crate::clock::parse_rfc3339_millis(rfc3339)?;
        crate::clock::rfc3339_signed(millis.div_euclid(1000))
    }

    /// The context, with the IP address and the time only when `reads`
    /// says a policy reads them: as Cedar extension values they cost
    /// microseconds each to build (Cedar parses the constructor's name and
    /// the value every time). Leaving one out rests on [`Reads::of`]
    /// seeing every read, `context has time` included: that test would
    /// answer false for an attribute left out (an access would fail to
    /// evaluate, which denies).
    pub(super) fn context(&self, reads: Reads) -> Result<Context, String> {
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
pub(super) fn string_set(values: impl IntoIterator<Item = String>) -> RestrictedExpression {
    RestrictedExpression::new_set(values.into_iter().map(RestrictedExpression::new_string))
}

/// The extension-value expression built last, by its text: Cedar parses
/// the constructor's name (`ip`, `datetime`) each time it builds one, about
/// 3 µs; the time changes once a second, and one decision (the routes of
/// one path) or one caller's next request asks for the same address again.
pub(super) struct LastExpression(std::sync::Mutex<Option<(String, RestrictedExpression)>>);

impl LastExpression {
    const fn new() -> Self {
        Self(std::sync::Mutex::new(None))
    }

    pub(super) fn get(
        &self,
        text: &str,
        build: fn(&str) -> RestrictedExpression,
    ) -> RestrictedExpression {
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
pub(super) struct Built {
    pub(super) principal: EntityUid,
    pub(super) resource: EntityUid,
    pub(super) entities: Entities,
}

impl Built {
    /// Everything the entities are built from, written out: two subjects
    /// with the same key have the same entities.
    pub(super) fn key(subject: &Subject<'_>) -> String {
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

    pub(super) fn of(subject: &Subject<'_>) -> Result<Self, String> {
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
pub(super) struct EntityMemo(std::sync::Mutex<HashMap<String, std::sync::Arc<Built>>>);

impl EntityMemo {
    const CAPACITY: usize = 1024;

    pub(super) fn get(&self, subject: &Subject<'_>) -> Result<std::sync::Arc<Built>, String> {
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
