//! IAM policy documents for API Gateway that stay right when API Gateway caches them
//! and reuses them for another route of the same caller: what an Allow
//! lists (`allow_list`).
//!
//! An Allow lists every rule the caller satisfies: tenant routes with this
//! tenant's id written into the ARN (so it can never open another tenant),
//! other path parameters as `*`. Because `*` in an execute-api ARN also
//! spans `/`, a wildcard that would also match a route the caller is *not*
//! allowed is not used; that rule is then allowed only for the exact ARN of
//! this request. The result is checked against every rule before it is
//! returned.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use authz_core::model::values::{any_covers, Permission, TenantId, UserId};
use authz_core::policy::cedar::{Facts, Policies, Standing};
use authz_core::policy::route_rules::{Rule, SelfRule, TENANT_PARAM};

use crate::routes::RouteRules;
use percent_encoding::percent_decode_str;
use serde_json::value::RawValue;

/// Most resources one Allow statement may list; past that only the
/// requested ARN is allowed (and results cannot be cached usefully).
pub const MAX_RESOURCES: usize = 100;

/// The parts of a `methodArn`:
/// `arn:aws:execute-api:{region}:{account}:{apiId}/{stage}/{METHOD}/{path}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodArn {
    /// `arn:aws:execute-api:{region}:{account}:{apiId}/{stage}`.
    pub prefix: String,
    pub method: String,
    /// The request path without its leading `/`.
    pub path: String,
}

impl MethodArn {
    pub fn parse(arn: &str) -> Option<Self> {
        if !arn.starts_with("arn:") {
            return None;
        }
        let mut parts = arn.splitn(4, '/');
        let api = parts.next()?;
        let stage = parts.next()?;
        let method = parts.next()?;
        let path = parts.next().unwrap_or("");
        Some(Self {
            prefix: arn[..api.len() + 1 + stage.len()].to_string(),
            method: method.to_string(),
            path: path.to_string(),
        })
    }

    pub fn arn(&self) -> String {
        self.arn_with(&self.method)
    }

    /// The ARN of the same path with another method.
    pub fn arn_with(&self, method: &str) -> String {
        let mut arn = String::with_capacity(self.prefix.len() + method.len() + self.path.len() + 2);
        for part in [&self.prefix, "/", method, "/", &self.path] {
            arn.push_str(part);
        }
        arn
    }

    /// Whether this ARN names exactly a `method` request to the route
    /// `resource` (a template such as `/tenants/{tenantId}/members`) with
    /// `params` in its braces: the fields of an authorizer event must agree
    /// with each other before any of them is trusted. A `*` or `?` in the
    /// ARN's path or a parameter never agrees: it would be a wildcard in
    /// the policy. A parameter may be the percent-decoded form of its
    /// segment of the ARN.
    pub fn names(&self, method: &str, resource: &str, params: &HashMap<String, String>) -> bool {
        if self.method != method || has_any(&self.path, b"*?") {
            return false;
        }
        let (mut template, mut path) = (resource.split('/').skip(1), self.path.split('/'));
        let mut used = 0;
        let agrees = loop {
            let (t, p) = match (template.next(), path.next()) {
                (None, None) => break true,
                (Some(t), Some(p)) => (t, p),
                _ => break false,
            };
            let fits = match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                None => t == p,
                Some(name) => {
                    used += 1;
                    params.get(name).is_some_and(|v| {
                        !v.is_empty()
                            && !has_any(v, b"*?/")
                            && (v == p
                                || percent_decode_str(p).decode_utf8().is_ok_and(|d| d == *v))
                    })
                }
            };
            if !fits {
                break false;
            }
        };
        agrees && used == params.len()
    }
}

/// Whether `text` holds any of the ASCII `bytes`.
fn has_any(text: &str, bytes: &[u8]) -> bool {
    text.bytes().any(|b| bytes.contains(&b))
}

/// What the caller holds, for deciding each rule.
pub struct Holdings<'a> {
    /// The tenant of the request, when it is a tenant route.
    pub tenant: Option<&'a TenantId>,
    /// The grant's permissions in that tenant (empty without a grant).
    pub tenant_permissions: &'a [Permission],
    /// The user's global permissions.
    pub global_permissions: &'a [Permission],
    /// The token's issuer is bound to the request's tenant: no rule but a
    /// tenant rule is theirs, whatever they hold.
    pub bound: bool,
}

impl Holdings<'_> {
    /// [`Holdings::allows`] for each of `rules`.
    pub fn allowed(&self, rules: &[Rule]) -> Vec<bool> {
        rules.iter().map(|r| self.allows(r)).collect()
    }

    /// Whether the caller may use `rule` (in this tenant, for tenant rules)
    /// wherever its parameters point: an invitee rule and a caller rule
    /// are open to every active caller; a directory rule to no user. (A
    /// `self` rule on the caller's own id is decided per request, by
    /// [`Rule::is_self`].)
    pub fn allows(&self, rule: &Rule) -> bool {
        if self.bound && !rule.is_tenant_scoped() {
            return false;
        }
        match rule.self_rule {
            Some(SelfRule::Invitee | SelfRule::Caller) => return true,
            // A tenant's SCIM routes are its directory's alone.
            Some(SelfRule::Directory) => return false,
            _ => {}
        }
        let required = rule.permission.as_str();
        if any_covers(self.global_permissions, required) {
            return true;
        }
        rule.is_tenant_scoped()
            && self.tenant.is_some()
            && any_covers(self.tenant_permissions, required)
    }
}

/// One segment of a rule's resource template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Tenant,
    /// Any other parameter, by its name.
    Param(String),
}

/// A rule's ARN shape: its method (`*` stays `*`) and segments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    method: String,
    segments: Vec<Segment>,
    tenant_scoped: bool,
}

impl Shape {
    fn of(rule: &Rule) -> Self {
        let segments: Vec<Segment> = rule
            .resource
            .split('/')
            .skip(1)
            .map(|s| {
                if s == format!("{{{TENANT_PARAM}}}") {
                    Segment::Tenant
                } else if let Some(name) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Segment::Param(name.to_string())
                } else {
                    Segment::Literal(s.to_string())
                }
            })
            .collect();
        Self {
            method: rule.method.clone(),
            tenant_scoped: segments.contains(&Segment::Tenant),
            segments,
        }
    }

    /// Its wildcard pattern under `prefix` in `tenant`: `prefix/METHOD/path`,
    /// other parameters (and a `*` method) as `*`.
    fn pattern(&self, prefix: &str, tenant: &str) -> String {
        let mut arn = String::with_capacity(prefix.len() + 64);
        arn.push_str(prefix);
        arn.push('/');
        arn.push_str(&self.method);
        arn.push('/');
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                arn.push('/');
            }
            match segment {
                Segment::Literal(l) => arn.push_str(l),
                Segment::Tenant => arn.push_str(tenant),
                Segment::Param(_) => arn.push('*'),
            }
        }
        arn
    }
}

/// One segment of an ARN pattern an Allow may list (after the stage):
/// as written, or `*`, which IAM matches with any characters, `/`
/// included.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Glob {
    Exact(String),
    Star,
}

/// One segment of the ARNs of a rule's requests: as written, or any
/// non-empty segment (a parameter, or the method of a `*` rule).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Exact(String),
    Any,
}

impl Shape {
    /// Its wildcard pattern in `tenant`: the method and path, parameters
    /// (and a `*` method) as `*`.
    fn glob(&self, tenant: &str) -> Vec<Glob> {
        let method = match self.method.as_str() {
            "*" => Glob::Star,
            m => Glob::Exact(m.to_string()),
        };
        std::iter::once(method)
            .chain(self.segments.iter().map(|s| match s {
                Segment::Literal(l) => Glob::Exact(l.clone()),
                Segment::Tenant => Glob::Exact(tenant.to_string()),
                Segment::Param(_) => Glob::Star,
            }))
            .collect()
    }

    /// The ARNs of its requests in `tenant`, segment by segment.
    fn parts(&self, tenant: &str) -> Vec<Part> {
        let method = match self.method.as_str() {
            "*" => Part::Any,
            m => Part::Exact(m.to_string()),
        };
        std::iter::once(method)
            .chain(self.segments.iter().map(|s| match s {
                Segment::Literal(l) => Part::Exact(l.clone()),
                Segment::Tenant => Part::Exact(tenant.to_string()),
                Segment::Param(_) => Part::Any,
            }))
            .collect()
    }
}

/// Whether `glob` matches some request ARN of `parts` that API Gateway
/// would route to that rule. Each exact segment of the pattern takes one
/// segment equal to it (or a parameter, which may hold anything), each
/// `*` one or more whole segments (a request's segments are never
/// empty). A request the pattern's own rule also names, segment for
/// segment, goes to whichever of the two is more specific (a literal
/// beats a parameter at the first segment where they differ, then a
/// method beats `*`): when that is the pattern's rule, the request is
/// its own, not the other's.
fn meets(glob: &[Glob], parts: &[Part]) -> bool {
    walk(glob, parts, 0, true, None, None)
}

/// [`meets`], from segment `at`: whether the pattern has kept to one
/// segment per `*` (so its own rule names the request too), and the
/// first difference of kind found in the path and in the method (`true`:
/// the pattern's rule is the more specific there).
fn walk(
    glob: &[Glob],
    parts: &[Part],
    at: usize,
    one_to_one: bool,
    path: Option<bool>,
    method: Option<bool>,
) -> bool {
    let decide = |first: Option<bool>, pattern_wins: bool, kind: usize| match kind {
        0 => (first, method.or(Some(pattern_wins))),
        _ => (first.or(Some(pattern_wins)), method),
    };
    match glob.split_first() {
        None => {
            let own = path.unwrap_or(method == Some(true));
            parts.is_empty() && !(one_to_one && own)
        }
        Some((Glob::Exact(g), rest)) => match parts.split_first() {
            Some((Part::Exact(p), more)) if p == g => {
                walk(rest, more, at + 1, one_to_one, path, method)
            }
            Some((Part::Any, more)) => {
                let (path, method) = decide(path, true, at);
                walk(rest, more, at + 1, one_to_one, path, method)
            }
            _ => false,
        },
        Some((Glob::Star, rest)) => (1..=parts.len()).any(|taken| {
            let (path, method) = match (taken, &parts[0]) {
                (1, Part::Exact(_)) => decide(path, false, at),
                _ => (path, method),
            };
            walk(
                rest,
                &parts[taken..],
                at + taken,
                one_to_one && taken == 1,
                path,
                method,
            )
        }),
    }
}

/// The rules compiled for building policies. Whether one rule's wildcard
/// pattern would also match another rule's requests depends only on the
/// rules (tenant ids are 26-character upper-case ULIDs, which no route
/// literal can stand in for), so it is worked out once, here, instead of
/// on every decision: exactly, segment by segment ([`meets`]), for every
/// method a `*` rule takes and every value a parameter may have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyPlan {
    shapes: Vec<Shape>,
    /// `same_tenant[i]`: rules whose requests in the same tenant (or,
    /// for global rules, at all) rule `i`'s wildcard pattern also matches.
    same_tenant: Vec<Vec<usize>>,
    /// `other_tenant[i]`: rule `i`'s pattern also matches a tenant rule's
    /// request in another tenant, so it is never used.
    other_tenant: Vec<bool>,
    /// `by_length[n]`: the rules whose templates have `n` segments, the
    /// only ones that can name a path of `n` segments.
    by_length: Vec<Vec<usize>>,
}

impl PolicyPlan {
    pub fn new(rules: &[Rule]) -> Self {
        // Two distinct tenants and a placeholder prefix: the relation does
        // not depend on their values.
        const THIS: &str = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C";
        const OTHER: &str = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9D";
        let shapes: Vec<Shape> = rules.iter().map(Shape::of).collect();
        let here: Vec<Vec<Part>> = shapes.iter().map(|s| s.parts(THIS)).collect();
        let other: Vec<Option<Vec<Part>>> = shapes
            .iter()
            .map(|s| s.tenant_scoped.then(|| s.parts(OTHER)))
            .collect();
        let mut same_tenant = Vec::with_capacity(shapes.len());
        let mut other_tenant = Vec::with_capacity(shapes.len());
        for shape in &shapes {
            let glob = shape.glob(THIS);
            same_tenant.push(
                here.iter()
                    .enumerate()
                    .filter(|(_, parts)| meets(&glob, parts))
                    .map(|(j, _)| j)
                    .collect(),
            );
            other_tenant.push(other.iter().flatten().any(|parts| meets(&glob, parts)));
        }
        let mut by_length: Vec<Vec<usize>> = Vec::new();
        for (i, shape) in shapes.iter().enumerate() {
            let n = shape.segments.len();
            if by_length.len() <= n {
                by_length.resize(n + 1, Vec::new());
            }
            by_length[n].push(i);
        }
        Self {
            shapes,
            same_tenant,
            other_tenant,
            by_length,
        }
    }

    /// The rules (by index, in file order) whose templates can name a
    /// path of `segments` segments.
    pub fn of_length(&self, segments: usize) -> &[usize] {
        self.by_length.get(segments).map_or(&[], Vec::as_slice)
    }

    /// The path parameters with which rule `i`'s template names the
    /// concrete `path` (a method ARN's path split at `/`; values
    /// percent-decoded), if it can: no segment empty where a parameter
    /// stands, every literal equal.
    pub fn params(&self, i: usize, path: &[&str]) -> Option<HashMap<String, String>> {
        let segments = &self.shapes[i].segments;
        // Checked before anything is allocated: most templates differ from
        // the path in their number of segments or in a literal one.
        let fits = segments.len() == path.len()
            && segments.iter().zip(path).all(|(s, p)| match s {
                Segment::Literal(l) => l == p,
                Segment::Tenant | Segment::Param(_) => !p.is_empty(),
            });
        if !fits {
            return None;
        }
        let mut params = HashMap::new();
        for (segment, p) in segments.iter().zip(path) {
            let name = match segment {
                Segment::Literal(_) => continue,
                Segment::Tenant => TENANT_PARAM,
                Segment::Param(name) => name.as_str(),
            };
            let value = percent_decode_str(p).decode_utf8().ok()?;
            params.insert(name.to_string(), value.into_owned());
        }
        Some(params)
    }

    /// The resources to allow for a caller whose request is `request`:
    /// every satisfied rule's ARN pattern (this tenant's id in it, other
    /// parameters `*`) that cannot also match a rule the caller may not use
    /// or another tenant's request, plus the exact ARN of the request.
    ///
    /// `allowed[i]` says whether the caller may use rule `i` wherever its
    /// parameters point ([`Holdings::allows`], and what the policies say).
    pub fn allowed_resources(
        &self,
        allowed: &[bool],
        tenant: Option<&TenantId>,
        request: &MethodArn,
    ) -> Vec<String> {
        with_request(request, &self.patterns(allowed, tenant, &request.prefix))
    }

    /// The wildcard patterns of [`PolicyPlan::allowed_resources`], for
    /// ARNs under `prefix`: they depend on the caller's holdings, not on
    /// the request.
    pub fn patterns(
        &self,
        allowed: &[bool],
        tenant: Option<&TenantId>,
        prefix: &str,
    ) -> Vec<String> {
        let tenant = tenant.map(|t| t.to_string());
        let mut patterns: Vec<String> = Vec::new();
        for (i, shape) in self.shapes.iter().enumerate() {
            if !allowed[i] || self.other_tenant[i] || (shape.tenant_scoped && tenant.is_none()) {
                continue;
            }
            // A rule the caller may not use blocks the wildcard; a tenant
            // rule only does so when there is a tenant to be in.
            let blocked = self.same_tenant[i]
                .iter()
                .any(|&j| !allowed[j] && (tenant.is_some() || !self.shapes[j].tenant_scoped));
            if blocked {
                continue;
            }
            let pattern = shape.pattern(prefix, tenant.as_deref().unwrap_or(""));
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
        }
        patterns
    }
}

/// The request's own ARN, then `patterns` (less one equal to it); only
/// the request's ARN when that would list more than [`MAX_RESOURCES`].
fn with_request(request: &MethodArn, patterns: &[String]) -> Vec<String> {
    let arn = request.arn();
    let mut resources = Vec::with_capacity(patterns.len() + 4);
    resources.extend(patterns.iter().filter(|p| **p != arn).cloned());
    if resources.len() + 1 > MAX_RESOURCES {
        resources.clear();
    }
    resources.insert(0, arn);
    resources
}

/// What an Allow lists whatever the request, for one caller's holdings
/// under one API stage (`prefix`): which rules the holdings allow, and the
/// wildcards they give. Worked out once per cached standing
/// (`judge::AllowParts`), not on every decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    allowed: Vec<bool>,
    patterns: Arc<Patterns>,
    /// Tenant rules only ([`Holdings::bound`]).
    pub(crate) bound: bool,
}

/// A caller's wildcard patterns, and each already written as the JSON
/// string a response lists: every Allow of the standing shares them.
#[derive(Debug)]
pub struct Patterns {
    arns: Vec<String>,
    json: Vec<Box<RawValue>>,
}

impl PartialEq for Patterns {
    fn eq(&self, other: &Self) -> bool {
        self.arns == other.arns
    }
}

impl Eq for Patterns {}

impl Patterns {
    fn new(arns: Vec<String>) -> Self {
        let json = arns
            .iter()
            .map(|a| serde_json::value::to_raw_value(a).expect("a string serializes"))
            .collect();
        Self { arns, json }
    }
}

/// What an Allow's IAM policy document lists: the ARNs decided for its
/// request (its own first), then its caller's wildcard patterns, shared
/// with the standing and serialized once ([`Reach`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    pub listed: Vec<String>,
    pub patterns: Option<Arc<Patterns>>,
}

impl Resources {
    /// Every ARN listed, in the order the response lists them.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.listed
            .iter()
            .chain(self.patterns.iter().flat_map(|p| p.arns.iter()))
            .map(String::as_str)
    }
}

impl serde::Serialize for Resources {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let shared = self.patterns.as_ref().map_or(&[][..], |p| &p.json[..]);
        let mut seq = s.serialize_seq(Some(self.listed.len() + shared.len()))?;
        for arn in &self.listed {
            seq.serialize_element(arn)?;
        }
        for arn in shared {
            seq.serialize_element(arn)?;
        }
        seq.end()
    }
}

impl Reach {
    pub fn new(rules: &RouteRules, holdings: &Holdings<'_>, prefix: &str) -> Self {
        let allowed = holdings.allowed(rules.rules());
        let patterns = rules.plan().patterns(&allowed, holdings.tenant, prefix);
        Self {
            allowed,
            patterns: Arc::new(Patterns::new(patterns)),
            bound: holdings.bound,
        }
    }

    /// Whether the caller may be listed on `rule` at all.
    fn admits(&self, rule: &Rule) -> bool {
        !self.bound || rule.is_tenant_scoped()
    }
}

/// The ARNs an Allow for `user_id` lists, beside this request's: API
/// Gateway caches the answer by the token and the path, and evaluates it
/// for every method on that path, so it lists every method the caller may
/// use there, by its exact ARN, self rules included (with Cedar policies
/// that apply, each decided with its own method, template and
/// parameters); without them, also the wildcards of every rule the
/// caller's holdings allow (`reach`, [`PolicyPlan::allowed_resources`]).
pub(crate) fn allow_list(
    rules: &RouteRules,
    policies: &Policies,
    standing: &Standing<'_>,
    reach: &Reach,
    user_id: UserId,
    method_arn: &MethodArn,
    facts: impl Fn() -> Facts,
) -> Resources {
    let tenant_id = standing.tenant.map(|(t, _)| t);
    if !policies.apply_to(tenant_id, standing.own) {
        let arn = method_arn.arn();
        let patterns = &reach.patterns.arns;
        // The patterns are shared as they are (one of them may be this
        // very ARN, a route without parameters), unless there are too
        // many to list at all.
        let shared = patterns.len() < MAX_RESOURCES;
        let mut listed = Vec::new();
        for arn in std::iter::once(arn).chain(same_path(rules, method_arn, |i, r, params| {
            reach.allowed[i] || (reach.admits(r) && r.is_self(&user_id, params))
        })) {
            let known = listed.contains(&arn) || (shared && patterns.contains(&arn));
            if !known {
                listed.push(arn);
            }
        }
        Resources {
            listed,
            patterns: shared.then(|| reach.patterns.clone()),
        }
    } else {
        // With policies, only the routes of this same path are listed,
        // each decided with its own method, template and parameters.
        let here = facts();
        let mut listed = vec![method_arn.arn()];
        listed.extend(same_path(rules, method_arn, |_, r, params| {
            reach.admits(r)
                && policies
                    .judge(
                        standing,
                        r.permission.as_str(),
                        r.is_self(&user_id, params),
                        || Facts {
                            method: r.method.clone(),
                            route: r.resource.clone(),
                            ..here.clone()
                        },
                    )
                    .allowed
        }));
        Resources {
            listed,
            patterns: None,
        }
    }
}

/// The exact ARNs of the other methods on the request's path that
/// `allowed` (given each rule's index) allows. A method is listed only
/// when every rule of that method whose template can name this path is
/// allowed (with the parameters the path gives it): whichever one API
/// Gateway routes the request to, it is allowed. `*`-method rules are not
/// listed (a request they take is decided afresh, from the cache's 403
/// until it expires).
fn same_path(
    rules: &RouteRules,
    method_arn: &MethodArn,
    allowed: impl Fn(usize, &Rule, &HashMap<String, String>) -> bool,
) -> Vec<String> {
    let path: Vec<&str> = method_arn.path.split('/').collect();
    let mut by_method: BTreeMap<&str, bool> = Default::default();
    // A `*` rule naming the path may take a request of any method: one the
    // caller may not use there vetoes every method.
    let mut any_method = true;
    for &i in rules.plan().of_length(path.len()) {
        let r = &rules.rules()[i];
        if r.method == method_arn.method {
            continue;
        }
        let Some(params) = rules.plan().params(i, &path) else {
            continue;
        };
        // A tenant route is denied whoever asks when its tenant id is not
        // one.
        let tenant_ok = !r.is_tenant_scoped()
            || params
                .get(TENANT_PARAM)
                .is_some_and(|t| TenantId::parse(t).is_ok());
        let ok = tenant_ok && allowed(i, r, &params);
        if r.method == "*" {
            any_method &= ok;
        } else {
            *by_method.entry(r.method.as_str()).or_insert(true) &= ok;
        }
    }
    by_method
        .into_iter()
        .filter(|(_, all)| *all && any_method)
        .map(|(m, _)| method_arn.arn_with(m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::RouteRules;
    use authz_core::policy::iam::arn_matches;

    /// The ARNs of `rule`'s requests under `prefix` in `tenant` that could
    /// meet `pattern`: a `*` method as the pattern's method (or `GET`),
    /// each parameter as one of the pattern's own segments or `x`. A
    /// pattern's literal segment can only be met by a whole segment, so
    /// these are all the fills that matter.
    fn samples(prefix: &str, rule: &Rule, tenant: Option<&TenantId>, pattern: &str) -> Vec<String> {
        let words: Vec<&str> = pattern[prefix.len() + 1..]
            .split('/')
            .filter(|w| *w != "*")
            .chain(["zzz"])
            .collect();
        let methods: Vec<&str> = if rule.method == "*" {
            words.clone()
        } else {
            vec![rule.method.as_str()]
        };
        let mut arns: Vec<String> = methods.iter().map(|m| format!("{prefix}/{m}")).collect();
        for segment in rule.resource.split('/').skip(1) {
            let choices: Vec<String> = if segment == format!("{{{TENANT_PARAM}}}") {
                match tenant {
                    Some(t) => vec![t.to_string()],
                    None => return Vec::new(),
                }
            } else if segment.starts_with('{') {
                words.iter().map(|w| w.to_string()).collect()
            } else {
                vec![segment.to_string()]
            };
            arns = arns
                .iter()
                .flat_map(|a| choices.iter().map(move |c| format!("{a}/{c}")))
                .collect();
        }
        arns
    }

    /// The rule API Gateway routes `method/path` to: of those whose
    /// template names it (a `*` rule any method), the most specific (a
    /// literal beats a parameter at the first segment where they differ,
    /// then a method beats `*`).
    fn route(rules: &RouteRules, arn: &str) -> Option<usize> {
        let (method, path) = arn.split_once('/')?;
        let path: Vec<&str> = path.split('/').collect();
        let kinds = |rule: &Rule| -> Option<Vec<bool>> {
            let segments: Vec<&str> = rule.resource.split('/').skip(1).collect();
            (segments.len() == path.len()).then_some(())?;
            segments
                .iter()
                .zip(&path)
                .map(|(s, p)| match s.starts_with('{') {
                    true => Some(false),
                    false => (s == p).then_some(true),
                })
                .collect()
        };
        rules
            .rules()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.method == method || r.method == "*")
            .filter_map(|(i, r)| Some((i, kinds(r)?, r.method != "*")))
            .max_by(|a, b| (&a.1, a.2).cmp(&(&b.1, b.2)).then(b.0.cmp(&a.0)))
            .map(|(i, _, _)| i)
    }

    /// The algorithm `PolicyPlan` replaced, kept as its reference: each
    /// wildcard matched against the requests of every rule by enumerating
    /// them ([`samples`]) where the plan aligns segments ([`meets`]). The
    /// matches depend only on the rules, the tenant and the stage, so they
    /// are enumerated once per rule set and tenant.
    struct Reference {
        prefix: String,
        /// Per rule, its pattern without and with the tenant, and which
        /// rules each opens: in no tenant, in the tenant, and (tenant
        /// rules) in another tenant.
        rules: Vec<Compiled>,
    }

    /// One rule's patterns (without and with the tenant) and what each
    /// opens of every rule (see [`Reference::rules`]).
    type Compiled = (Option<String>, Option<String>, Vec<[bool; 4]>);

    impl Reference {
        fn new(rules: &RouteRules, tenant: &TenantId, prefix: &str) -> Self {
            fn rule_arn(prefix: &str, rule: &Rule, tenant: Option<&TenantId>) -> Option<String> {
                let mut path = Vec::new();
                for segment in rule.resource.split('/').skip(1) {
                    if segment == format!("{{{TENANT_PARAM}}}") {
                        path.push(tenant?.to_string());
                    } else if segment.starts_with('{') {
                        path.push("*".to_string());
                    } else {
                        path.push(segment.to_string());
                    }
                }
                Some(format!("{prefix}/{}/{}", rule.method, path.join("/")))
            }
            let other_tenant = TenantId::generate();
            let opens = |pattern: &Option<String>, j: usize, tenant: Option<&TenantId>| {
                let other = &rules.rules()[j];
                pattern.as_ref().is_some_and(|p| {
                    samples(prefix, other, tenant, p).iter().any(|arn| {
                        arn_matches(p, arn) && route(rules, &arn[prefix.len() + 1..]) == Some(j)
                    })
                })
            };
            let compiled = rules
                .rules()
                .iter()
                .map(|rule| {
                    let (global, here) = (
                        rule_arn(prefix, rule, None),
                        rule_arn(prefix, rule, Some(tenant)),
                    );
                    let matrix = rules
                        .rules()
                        .iter()
                        .enumerate()
                        .map(|(j, other)| {
                            let elsewhere = other.is_tenant_scoped();
                            [
                                opens(&global, j, None),
                                opens(&here, j, Some(tenant)),
                                elsewhere && opens(&global, j, Some(&other_tenant)),
                                elsewhere && opens(&here, j, Some(&other_tenant)),
                            ]
                        })
                        .collect();
                    (global, here, matrix)
                })
                .collect();
            Self {
                prefix: prefix.to_string(),
                rules: compiled,
            }
        }

        fn allowed_resources(
            &self,
            rules: &RouteRules,
            holdings: &Holdings<'_>,
            request: &MethodArn,
        ) -> Vec<String> {
            assert_eq!(request.prefix, self.prefix);
            let mut resources = vec![request.arn()];
            let allows: Vec<bool> = rules.rules().iter().map(|r| holdings.allows(r)).collect();
            for i in 0..rules.rules().len() {
                if !allows[i] {
                    continue;
                }
                let (global, here, matrix) = &self.rules[i];
                let in_tenant = holdings.tenant.is_some();
                let Some(pattern) = (if in_tenant { here } else { global }) else {
                    continue;
                };
                let at = usize::from(in_tenant);
                let forbidden =
                    (0..allows.len()).any(|j| (!allows[j] && matrix[j][at]) || matrix[j][2 + at]);
                if !forbidden && !resources.contains(pattern) {
                    resources.push(pattern.clone());
                }
            }
            if resources.len() > MAX_RESOURCES {
                resources.truncate(1);
            }
            resources
        }
    }

    /// Every subset-like mix of permissions over the shipped rules and a
    /// set of tricky ones, with and without a tenant, on every route: the
    /// plan builds exactly the policy the reference builds.
    #[test]
    fn the_plan_builds_what_the_reference_builds() {
        let tricky = r#"{"routes":[
            {"method":"GET","resource":"/docs/{docId}","permission":"doc:read"},
            {"method":"GET","resource":"/docs/{docId}/secrets","permission":"secret:read"},
            {"method":"*","resource":"/docs","permission":"doc:any"},
            {"method":"GET","resource":"/tenants/{tenantId}/items/{itemId}","permission":"item:read"},
            {"method":"GET","resource":"/tenants/{tenantId}/items","permission":"item:list"},
            {"method":"DELETE","resource":"/tenants/{tenantId}","permission":"tenant:delete"},
            {"method":"GET","resource":"/{any}/x","permission":"odd:read"},
            {"method":"GET","resource":"/tenants/{tenantId}/tickets/{docId}/attachments","permission":"item:read"},
            {"method":"*","resource":"/tenants/{tenantId}/tickets/{docId}/attachments","permission":"tenant:create"},
            {"method":"DELETE","resource":"/tenants/{tenantId}/tickets/{docId}","permission":"tenant:delete"},
            {"method":"DELETE","resource":"/docs/{docId}/draft","permission":"doc:read"},
            {"method":"DELETE","resource":"/docs/legal/{itemId}","permission":"secret:read"}
        ]}"#;
        let shipped = include_str!("../../../route_rules/provisioning.json");
        let pool: Vec<Permission> = [
            "*",
            "doc:read",
            "secret:read",
            "doc:any",
            "item:*",
            "item:read",
            "tenant:read",
            "tenant:delete",
            "member:read",
            "member:write",
            "member:*",
            "user:read",
            "role:read",
            "policy:*",
            "odd:read",
            "tenant:list",
            "tenant:create",
        ]
        .iter()
        .map(|p| Permission::parse(p).unwrap())
        .collect();
        let tenant = TenantId::generate();
        let mut checked = 0;
        let prefix = "arn:aws:execute-api:r:1:api/prod";
        for json in [tricky, shipped] {
            let rules = RouteRules::parse(json).unwrap();
            let plan = PolicyPlan::new(rules.rules());
            let reference = Reference::new(&rules, &tenant, prefix);
            for mask in 0u32..(1 << 9) {
                let pick = |offset: usize| -> Vec<Permission> {
                    pool.iter()
                        .enumerate()
                        .filter(|(i, _)| {
                            (mask >> ((i + offset) % 9)) & 1 == 1 && !(i + offset).is_multiple_of(3)
                        })
                        .map(|(_, p)| p.clone())
                        .collect()
                };
                let (tenant_permissions, global_permissions) = (
                    pick(0),
                    if mask.is_multiple_of(7) {
                        pick(4)
                    } else {
                        vec![]
                    },
                );
                // A user's request on a directory's route is denied before
                // any policy is built (`admissible`): no plan to compare.
                for rule in rules
                    .rules()
                    .iter()
                    .filter(|r| r.self_rule != Some(SelfRule::Directory))
                {
                    let scoped = rule.is_tenant_scoped();
                    let holdings = Holdings {
                        tenant: scoped.then_some(&tenant),
                        tenant_permissions: &tenant_permissions,
                        global_permissions: &global_permissions,
                        bound: false,
                    };
                    let method = if rule.method == "*" {
                        "GET"
                    } else {
                        rule.method.as_str()
                    };
                    let path = rule
                        .resource
                        .replace(&format!("{{{TENANT_PARAM}}}"), &tenant.to_string())
                        .replace("{docId}", "d1")
                        .replace("{itemId}", "i1")
                        .replace("{userId}", "u1")
                        .replace("{any}", "a");
                    let request = MethodArn::parse(&format!(
                        "arn:aws:execute-api:r:1:api/prod/{method}{path}"
                    ))
                    .unwrap();
                    assert_eq!(
                        plan.allowed_resources(
                            &holdings.allowed(rules.rules()),
                            holdings.tenant,
                            &request
                        ),
                        reference.allowed_resources(&rules, &holdings, &request),
                        "{} {} with {tenant_permissions:?} / {global_permissions:?}",
                        rule.method,
                        rule.resource
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// A `*` rule takes requests of every method, and a parameter may
    /// hold any word a literal route has: an Allow never lists an ARN
    /// (wildcard or exact) that covers a request going to a rule the
    /// caller may not use.
    #[test]
    fn no_listed_arn_covers_a_star_rule_or_a_literal_route_the_caller_lacks() {
        let rules = RouteRules::parse(
            r#"{"routes":[
                {"method":"GET","resource":"/tenants/{tenantId}/tickets/{ticketId}/attachments","permission":"ticket:read"},
                {"method":"*","resource":"/tenants/{tenantId}/tickets/{ticketId}/attachments","permission":"attachment:admin"},
                {"method":"DELETE","resource":"/tenants/{tenantId}/tickets/{ticketId}","permission":"ticket:delete"},
                {"method":"DELETE","resource":"/tenants/{tenantId}/tickets/{ticketId}/{part}","permission":"ticket:delete"},
                {"method":"DELETE","resource":"/t/{tenantId}/docs/{docId}/draft","permission":"doc:delete"},
                {"method":"DELETE","resource":"/t/{tenantId}/docs/legal/{section}","permission":"legal:delete"},
                {"method":"GET","resource":"/t/{tenantId}/docs/legal/{section}","permission":"doc:read"}
            ]}"#,
        )
        .unwrap();
        let tenant = TenantId::generate();
        let held: Vec<Permission> = ["ticket:read", "ticket:delete", "doc:delete", "doc:read"]
            .iter()
            .map(|p| Permission::parse(p).unwrap())
            .collect();
        let holdings = Holdings {
            tenant: Some(&tenant),
            tenant_permissions: &held,
            global_permissions: &[],
            bound: false,
        };
        let allowed = holdings.allowed(rules.rules());
        let prefix = "arn:aws:execute-api:r:1:api/prod";
        for (asked, refused) in [
            (
                format!("GET/tenants/{tenant}/tickets/42/attachments"),
                format!("DELETE/tenants/{tenant}/tickets/42/attachments"),
            ),
            (
                format!("GET/t/{tenant}/docs/legal/draft"),
                format!("DELETE/t/{tenant}/docs/legal/draft"),
            ),
        ] {
            let request = MethodArn::parse(&format!("{prefix}/{asked}")).unwrap();
            let mut listed = rules
                .plan()
                .allowed_resources(&allowed, Some(&tenant), &request);
            listed.extend(same_path(&rules, &request, |i, _, _| allowed[i]));
            let refused = format!("{prefix}/{refused}");
            assert!(
                listed.iter().all(|arn| !arn_matches(arn, &refused)),
                "{asked}: {listed:?} covers {refused}"
            );
        }
    }

    #[test]
    fn method_arns_split() {
        let arn = MethodArn::parse(
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/tenants/T/members",
        )
        .unwrap();
        assert_eq!(
            arn.prefix,
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod"
        );
        assert_eq!(arn.method, "GET");
        assert_eq!(arn.path, "tenants/T/members");
        assert_eq!(
            arn.arn(),
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/tenants/T/members"
        );
        assert!(MethodArn::parse("nonsense").is_none());
    }

    #[test]
    fn a_wildcard_that_would_open_a_forbidden_route_is_not_used() {
        let rules = RouteRules::parse(
            r#"{"routes":[
                {"method":"GET","resource":"/docs/{docId}","permission":"doc:read"},
                {"method":"GET","resource":"/docs/{docId}/secrets","permission":"secret:read"},
                {"method":"GET","resource":"/tenants/{tenantId}/items/{itemId}","permission":"item:read"}
            ]}"#,
        )
        .unwrap();
        let read = [
            Permission::parse("doc:read").unwrap(),
            Permission::parse("item:read").unwrap(),
        ];
        let tenant = TenantId::generate();
        let holdings = Holdings {
            tenant: Some(&tenant),
            tenant_permissions: &read,
            global_permissions: &[],
            bound: false,
        };
        let request = MethodArn::parse(&format!(
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/{tenant}/items/i1"
        ))
        .unwrap();
        let plan = PolicyPlan::new(rules.rules());
        let resources =
            plan.allowed_resources(&holdings.allowed(rules.rules()), holdings.tenant, &request);
        let allows = |path: &str| {
            resources
                .iter()
                .any(|p| arn_matches(p, &format!("arn:aws:execute-api:r:1:api/prod/GET/{path}")))
        };
        assert!(
            allows(&format!("tenants/{tenant}/items/i2")),
            "{resources:?}"
        );
        assert!(!allows("docs/d1/secrets"), "{resources:?}");
        assert!(
            !allows(&format!("tenants/{}/items/i1", TenantId::generate())),
            "another tenant"
        );
        // The wildcard for /docs/{docId} was dropped, so docs are allowed
        // only where this request is: not here.
        assert!(!allows("docs/d1"));
        let on_doc = MethodArn::parse("arn:aws:execute-api:r:1:api/prod/GET/docs/d1").unwrap();
        let resources =
            plan.allowed_resources(&holdings.allowed(rules.rules()), holdings.tenant, &on_doc);
        assert!(resources.contains(&on_doc.arn()));
        assert!(!resources
            .iter()
            .any(|p| arn_matches(p, "arn:aws:execute-api:r:1:api/prod/GET/docs/d1/secrets")));
    }

    #[test]
    fn iam_wildcards() {
        assert!(arn_matches("a/*/c", "a/b/c"));
        assert!(arn_matches("a/*", "a/b/c/d"), "* spans slashes");
        assert!(arn_matches("a/?/c", "a/b/c"));
        assert!(!arn_matches("a/?/c", "a/bb/c"));
        assert!(!arn_matches("a/*/c", "a/b/d"));
        assert!(arn_matches("*", ""));
        assert!(arn_matches("a", "a"));
        assert!(!arn_matches("a", "ab"));
        assert!(arn_matches("a/é/*", "a/é/c"), "non-ASCII by character");
        assert!(
            arn_matches("a/?/c", "a/é/c"),
            "? is one character, not one byte"
        );
    }
}
