//! The stored Cedar policy set, indexed by scope (global, or a tenant's
//! own) and by the action a policy names, and the decision over it: allow
//! if and only if (the caller's roles give the permission, or a `permit`
//! matches) and no `forbid` matches; any error in a policy that could
//! apply is a Deny.

use std::collections::{BTreeSet, HashMap};

use cedar_policy::{PolicySet, Request};

use super::entities::{uid, Built, EntityMemo, Facts, Subject};
use super::preconditions::{Asked, Precondition};
use super::reads::Reads;
use super::schema::AnswerCaching;
use super::statement::{confined_to, gives_of, matches_on_roles, Keys};
use crate::model::items::{Policy, Tenant, TenantGrant, User};
use crate::model::values::{any_covers, Permission, RoleId, TenantId, TenantStatus, UserStatus};
use crate::policy::ceiling::{RoleKeyedPermit, RoleKeyedPermits};

/// The prefix of the permissions that manage policies: a holder of `*`
/// everywhere is never stopped by a policy on them (break glass).
pub const POLICY_ACTIONS: &str = "policy:";

/// The one Cedar authorizer (stateless; built once).
pub(super) fn cedar_authorizer() -> &'static cedar_policy::Authorizer {
    static AUTHORIZER: std::sync::OnceLock<cedar_policy::Authorizer> = std::sync::OnceLock::new();
    AUTHORIZER.get_or_init(cedar_policy::Authorizer::new)
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
    /// give the permission.
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

/// Determining policies in name order, once each.
fn sorted(found: impl Iterator<Item = Determining>) -> Vec<Determining> {
    let mut out: Vec<Determining> = found.collect();
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.policy_id.cmp(&b.policy_id)));
    out.dedup();
    out
}

/// The table's side of a decision: the caller and, on a tenant's
/// resource, the tenant (absent if it does not exist) and their grant in it.
#[derive(Debug, Clone, Copy)]
pub struct Standing<'a> {
    pub user: Option<&'a User>,
    pub tenant: Option<(&'a TenantId, Option<&'a Tenant>)>,
    pub grant: Option<&'a TenantGrant>,
    /// The tenant's own policies (its `TenantPolicies`), read with the
    /// rest, if it has any.
    pub own: Option<&'a Policies>,
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
        let now = crate::clock::now_seconds();
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
    /// The clock it was judged at (seconds since the epoch): what the
    /// global roles gave then is what it rests on.
    pub at: u64,
}

/// Policies evaluated together: one Cedar set, and what they read of the
/// context.
#[derive(Debug, Clone, Default)]
pub(super) struct Group {
    pub(super) set: PolicySet,
    pub(super) reads: Reads,
}

impl Group {
    fn add(&mut self, policy: cedar_policy::Policy, reads: Reads) -> bool {
        self.reads = self.reads.union(reads);
        self.set.add(policy).is_ok()
    }
}

/// Policies of one scope (global, or one tenant's own) that name one
/// action, or that name none: those without a precondition in one group, and
/// those with preconditions grouped by them (`preconditions`), so that a decision hands
/// Cedar only the groups whose preconditions may hold.
#[derive(Debug, Clone, Default)]
pub(super) struct Slice {
    pub(super) open: Group,
    pub(super) conditioned: Vec<(Vec<Precondition>, Group)>,
    /// What they all read of the context.
    pub(super) reads: Reads,
}

impl Slice {
    pub(super) fn is_empty(&self) -> bool {
        self.open.set.is_empty() && self.conditioned.is_empty()
    }

    pub(super) fn add(&mut self, policy: cedar_policy::Policy, reads: Reads) -> bool {
        self.reads = self.reads.union(reads);
        let preconditions = Precondition::of(&policy);
        if preconditions.is_empty() {
            return self.open.add(policy, reads);
        }
        match self
            .conditioned
            .iter_mut()
            .find(|(g, _)| *g == preconditions)
        {
            Some((_, group)) => group.add(policy, reads),
            None => {
                let mut group = Group::default();
                let added = group.add(policy, reads);
                self.conditioned.push((preconditions, group));
                added
            }
        }
    }

    /// The groups that may match what is `asked`.
    pub(super) fn groups<'s>(&'s self, asked: &'s Asked<'_>) -> impl Iterator<Item = &'s Group> {
        std::iter::once(&self.open)
            .filter(|g| !g.set.is_empty())
            .chain(
                self.conditioned
                    .iter()
                    .filter(|(preconditions, _)| preconditions.iter().all(|g| g.may_hold(asked)))
                    .map(|(_, group)| group),
            )
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
pub(super) struct Scope {
    /// Policies with no action constraint.
    pub(super) any: Slice,
    /// Per action, the policies that name it (`==` or in their list).
    pub(super) by_action: HashMap<String, Slice>,
}

impl Scope {
    /// Adds `policy`; false if a slice refused it (a duplicate id).
    pub(super) fn add(&mut self, policy: cedar_policy::Policy, reads: Reads) -> bool {
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

    pub(super) fn is_empty(&self) -> bool {
        self.any.is_empty() && self.by_action.values().all(Slice::is_empty)
    }

    /// The slices that can apply to `action`.
    pub(super) fn for_action<'s>(&'s self, action: &str) -> impl Iterator<Item = &'s Slice> {
        std::iter::once(&self.any)
            .chain(self.by_action.get(action))
            .filter(|s| !s.is_empty())
    }
}

/// The stored policies, ready to decide with: the global ones and each
/// tenant's own, each indexed by action.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    pub(super) global: Scope,
    pub(super) by_tenant: HashMap<TenantId, Scope>,
    /// Policy ids by name. Inside Cedar a policy is known by its name,
    /// which the table keeps unique (`policyId` is not a uniqueness rule,
    /// and a second policy under one Cedar id would not be added).
    pub(super) ids: HashMap<String, String>,
    /// Stored statements that no longer parse (or could not join the set):
    /// every decision is an error naming them (a broken `forbid` must not
    /// be skipped).
    pub(super) broken: Vec<Determining>,
    pub(super) len: usize,
    /// The length of its statements' text.
    pub(crate) bytes: u64,
    pub(super) memo: EntityMemo,
    /// The permits, for [`Policies::role_keyed`].
    pub(super) permits: Vec<cedar_policy::Policy>,
    /// The permits that match on roles held: what giving a role gives.
    /// Found on first use (provisioning's writes; never in the authorizer).
    pub(super) role_keyed: std::sync::OnceLock<RoleKeyedPermits>,
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
        Self::build_scoped(items, caching, None)
    }

    /// A tenant's own set (its `TenantPolicies`): a statement there that
    /// is not confined to `tenant` (the write refuses one; a hand-made
    /// item could hold one) counts as one that does not parse, so it
    /// denies in that tenant and reaches no other.
    pub fn build_tenant<'a>(
        items: impl IntoIterator<Item = &'a Policy>,
        caching: Option<AnswerCaching>,
        tenant: TenantId,
    ) -> Self {
        Self::build_scoped(items, caching, Some(tenant))
    }

    fn build_scoped<'a>(
        items: impl IntoIterator<Item = &'a Policy>,
        caching: Option<AnswerCaching>,
        only: Option<TenantId>,
    ) -> Self {
        let mut out = Policies::default();
        for item in items {
            let Some(statement) = &item.statement else {
                continue;
            };
            out.len += 1;
            out.bytes += statement.len() as u64;
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
            // A tenant's own set holds only that tenant's policies, and no
            // permit that matches on roles held (those stay in the global
            // set, which writes that give roles check against).
            let confined = confined_to(&policy);
            if only.is_some() && (confined != only || matches_on_roles(&policy)) {
                out.broken.push(named);
                continue;
            }
            let scope = match confined {
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
                if !keys.roles && keys.users.is_empty() {
                    continue;
                }
                // An action that is no permission is no route's: it gives
                // nothing a ceiling could hold back.
                if let Ok(gives) = gives_of(policy) {
                    found.push(RoleKeyedPermit {
                        tenant: confined_to(policy),
                        gives,
                        any_role: keys.any_role,
                        mentions: keys.mentions,
                        users: keys.users,
                    });
                }
            }
            found
        })
    }

    /// The stored statements that cannot be used (they do not parse, are
    /// too deep, or read what the answer cache does not key on): while
    /// there are any, every decision a policy could apply to denies.
    pub fn rejected(&self) -> &[Determining] {
        &self.broken
    }

    /// How many policies with a statement the set holds.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The tenant's own policies, if it has any.
    pub(super) fn own(&self, tenant: Option<&TenantId>) -> Option<&Scope> {
        tenant.and_then(|t| self.by_tenant.get(t))
    }

    /// Whether any policy could apply to a request on this tenant's
    /// resource (or a global one): when none can, the roles alone decide.
    pub fn apply_to(&self, tenant: Option<&TenantId>, own: Option<&Policies>) -> bool {
        let applies = |set: &Policies| {
            !set.broken.is_empty()
                || !set.global.is_empty()
                || set.own(tenant).is_some_and(|s| !s.is_empty())
        };
        applies(self) || (tenant.is_some() && own.is_some_and(applies))
    }

    /// A policy of this set as decisions name it, from its Cedar id (its
    /// name).
    pub(super) fn name(&self, name: &str) -> Determining {
        Determining {
            policy_id: self.ids.get(name).cloned().unwrap_or_default(),
            name: name.to_string(),
        }
    }

    /// The decision for `action` on the standing's resource: an active
    /// user whose roles give it (or for whom `self_rule` opens the route),
    /// or whom a `permit` lets through, and whom no `forbid` stops. `facts`
    /// is built only when a policy could apply.
    pub fn judge(
        &self,
        standing: &Standing<'_>,
        action: &str,
        self_rule: bool,
        facts: impl FnOnce() -> Facts,
    ) -> Judgement {
        let now = crate::clock::now_seconds();
        let refuse = |reason| Judgement {
            allowed: false,
            reason,
            verdict: Verdict::NoMatch,
            permissions: Vec::new(),
            roles: Vec::new(),
            at: now,
        };
        let Some(user) = standing.user else {
            return refuse("unknown user");
        };
        if user.status != UserStatus::Active {
            return refuse("user not active");
        }
        let grant = standing.counted_grant();
        let tenant_permissions = grant.map_or(&[][..], |g| &g.effective_permissions);
        let global_permissions = user.global_permissions(now);
        let roles_allow = self_rule
            || any_covers(global_permissions, action)
            || (standing.tenant.is_some() && any_covers(tenant_permissions, action));
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
                own: standing.own,
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
            _ if user.roles_ended_at(now) && any_covers(&user.effective_permissions, action) => {
                "global roles expired"
            }
            _ => "permission not held",
        };
        Judgement {
            allowed,
            reason,
            verdict,
            permissions,
            roles,
            at: now,
        }
    }

    /// What the policies that can apply to `action` on the tenant's
    /// resource (or a global one) read of the request.
    pub fn reads(&self, tenant: Option<&TenantId>, own: Option<&Policies>, action: &str) -> Reads {
        self.slices(tenant, own, action)
            .iter()
            .fold(Reads::default(), |r, (s, _)| r.union(s.reads))
    }

    /// The slices that can apply to `action` on the tenant's resource (or
    /// a global one), each with the set it is from (which names its
    /// policies): this set's, then the tenant's own set's.
    pub(super) fn slices<'s>(
        &'s self,
        tenant: Option<&TenantId>,
        own: Option<&'s Policies>,
        action: &str,
    ) -> Vec<(&'s Slice, &'s Policies)> {
        let of = |set: &'s Policies| {
            set.global
                .for_action(action)
                .chain(
                    set.own(tenant)
                        .into_iter()
                        .flat_map(|s| s.for_action(action)),
                )
                .map(move |slice| (slice, set))
        };
        let own = own.filter(|_| tenant.is_some());
        of(self).chain(own.into_iter().flat_map(of)).collect()
    }

    /// What the policies say about `subject` doing `action` with the facts
    /// `facts` builds (only when a policy can apply).
    pub fn decide(
        &self,
        subject: &Subject<'_>,
        action: &str,
        facts: impl FnOnce() -> Facts,
    ) -> Verdict {
        let own = subject.own.filter(|_| subject.tenant.is_some());
        let broken: Vec<Determining> = self
            .broken
            .iter()
            .chain(own.iter().flat_map(|o| o.broken.iter()))
            .cloned()
            .collect();
        if !broken.is_empty() {
            return Verdict::Error {
                policies: broken,
                message: "a stored policy cannot be evaluated safely: its statement does not \
                          parse, or it reads what the answer cache does not key on"
                    .into(),
            };
        }
        let slices = self.slices(subject.tenant.map(|(t, _)| t), own, action);
        if slices.is_empty() {
            return Verdict::NoMatch;
        }
        // Only the groups whose preconditions may hold are evaluated; when none
        // may, no Cedar request is built.
        let facts = facts();
        let asked = Asked::new(*subject, &facts);
        let groups: Vec<(&Group, &Policies)> = slices
            .iter()
            .flat_map(|(slice, set)| slice.groups(&asked).map(move |g| (g, *set)))
            .collect();
        if groups.is_empty() {
            return Verdict::NoMatch;
        }
        let reads = groups
            .iter()
            .fold(Reads::default(), |r, (g, _)| r.union(g.reads));
        let (request, built) = match self.request(subject, action, &facts, reads) {
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
        for (group, set) in groups {
            let response = cedar_authorizer().is_authorized(&request, &group.set, &built.entities);
            let diagnostics = response.diagnostics();
            errors.extend(diagnostics.errors().map(|e| match e {
                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                    (set.name(e.policy_id().as_ref()), e.to_string())
                }
            }));
            let reasons = diagnostics.reason().map(|id| set.name(id.as_ref()));
            match response.decision() {
                cedar_policy::Decision::Allow => permits.extend(reasons),
                cedar_policy::Decision::Deny => forbids.extend(reasons),
            }
        }
        if !errors.is_empty() {
            errors.sort_by(|a, b| a.0.name.cmp(&b.0.name).then(a.1.cmp(&b.1)));
            errors.dedup();
            let message = errors
                .iter()
                .map(|(_, m)| m.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            return Verdict::Error {
                message,
                policies: sorted(errors.into_iter().map(|(named, _)| named)),
            };
        }
        if !forbids.is_empty() {
            Verdict::Forbid(sorted(forbids.into_iter()))
        } else if !permits.is_empty() {
            Verdict::Permit(sorted(permits.into_iter()))
        } else {
            Verdict::NoMatch
        }
    }

    /// The Cedar request for `subject` doing `action`, with the entities
    /// it is decided over.
    pub(super) fn request(
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
