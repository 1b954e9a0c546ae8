//! The index against Cedar over the whole set: the oracle both
//! equivalence tests share (Cedar given every policy, the whole context,
//! the entities the index builds), and the seeded randomized run over
//! statements assembled from every scope, action form, condition kind and
//! test the index reads preconditions from or must leave to Cedar.

use cedar_policy::{Context, PolicySet, Request, RestrictedExpression};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use super::*;

/// Every policy in one Cedar set, and the items they came from.
pub(super) struct Whole<'a> {
    set: PolicySet,
    items: &'a [Policy],
}

impl<'a> Whole<'a> {
    pub(super) fn of(items: &'a [Policy]) -> Self {
        let mut set = PolicySet::new();
        for i in items {
            let id = cedar_policy::PolicyId::new(i.name.as_str());
            set.add(cedar_policy::Policy::parse(Some(id), i.statement.as_ref().unwrap()).unwrap())
                .unwrap();
        }
        Self { set, items }
    }

    /// The policies `names` names, as a verdict lists them.
    fn named(&self, names: Vec<String>) -> Vec<Determining> {
        let mut out: Vec<Determining> = names
            .into_iter()
            .map(|name| Determining {
                policy_id: self
                    .items
                    .iter()
                    .find(|p| p.name.as_str() == name)
                    .map(|p| p.policy_id.to_string())
                    .unwrap(),
                name,
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Cedar's verdict over the whole set, with the whole context built
    /// from `facts` and the entities the index builds for `subject`.
    pub(super) fn verdict(&self, subject: &Subject, action: &str, facts: &Facts) -> Verdict {
        let built = Built::of(subject).unwrap();
        let context = Context::from_pairs([
            (
                "sourceIp".to_string(),
                RestrictedExpression::new_ip(&facts.source_ip),
            ),
            (
                "time".to_string(),
                RestrictedExpression::new_datetime(&facts.time),
            ),
            (
                "method".to_string(),
                RestrictedExpression::new_string(facts.method.clone()),
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
        let response = cedar_authorizer().is_authorized(&request, &self.set, &built.entities);
        let errors: Vec<String> = response
            .diagnostics()
            .errors()
            .map(|e| match e {
                cedar_policy::AuthorizationError::PolicyEvaluationError(e) => {
                    e.policy_id().to_string()
                }
            })
            .collect();
        let reasons = self.named(
            response
                .diagnostics()
                .reason()
                .map(|r| r.to_string())
                .collect(),
        );
        if !errors.is_empty() {
            return Verdict::Error {
                policies: self.named(errors),
                message: String::new(),
            };
        }
        match response.decision() {
            cedar_policy::Decision::Allow => Verdict::Permit(reasons),
            cedar_policy::Decision::Deny if reasons.is_empty() => Verdict::NoMatch,
            cedar_policy::Decision::Deny => Verdict::Forbid(reasons),
        }
    }
}

/// A verdict as compared: an error's message is the evaluator's words.
pub(super) fn compared(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Error { policies, .. } => Verdict::Error {
            policies,
            message: String::new(),
        },
        v => v,
    }
}

/// What a random statement is made of, around one tenant `t`.
struct Parts {
    users: [UserId; 2],
    roles: [RoleId; 2],
    tenants: [TenantId; 3],
    actions: Vec<String>,
}

impl Parts {
    fn scope(&self, rng: &mut rand::rngs::StdRng, confined: Option<TenantId>) -> String {
        let principal = match rng.random_range(0..4) {
            0 => "principal".to_string(),
            1 => format!(
                r#"principal == User::"{}""#,
                self.users.choose(rng).unwrap()
            ),
            2 => format!(
                r#"principal in Role::"{}""#,
                self.roles.choose(rng).unwrap()
            ),
            _ => "principal is User".to_string(),
        };
        let action = match rng.random_range(0..3) {
            0 => "action".to_string(),
            1 => format!(
                r#"action == Action::"{}""#,
                self.actions.choose(rng).unwrap()
            ),
            _ => {
                let a: Vec<String> = (0..rng.random_range(1..4))
                    .map(|_| format!(r#"Action::"{}""#, self.actions.choose(rng).unwrap()))
                    .collect();
                format!("action in [{}]", a.join(", "))
            }
        };
        let resource = match confined {
            Some(t) => match rng.random_range(0..3) {
                0 => format!(r#"resource in Tenant::"{t}""#),
                1 => format!(r#"resource == Tenant::"{t}""#),
                _ => format!(r#"resource is Tenant in Tenant::"{t}""#),
            },
            None => match rng.random_range(0..6) {
                0 | 1 => "resource".to_string(),
                2 => format!(
                    r#"resource in Tenant::"{}""#,
                    self.tenants.choose(rng).unwrap()
                ),
                3 => "resource is Tenant".to_string(),
                4 => "resource is Platform".to_string(),
                _ => r#"resource == Platform::"platform""#.to_string(),
            },
        };
        format!("{principal}, {action}, {resource}")
    }

    /// One test: those the index takes preconditions from, and others it
    /// must leave to Cedar (negations, literals, one that errors where the
    /// tenant has no item).
    fn test(&self, rng: &mut rand::rngs::StdRng) -> String {
        match rng.random_range(0..16) {
            0 => r#"principal.status == "active""#.into(),
            1 => r#"principal.status == "suspended""#.into(),
            2 => r#"principal.email == "ana@example.com""#.into(),
            3 => r#"principal.emailDomain == "corp.example""#.into(),
            4 => format!(
                r#"principal.roles.contains("{}")"#,
                self.roles.choose(rng).unwrap()
            ),
            5 => r#"principal.permissions.contains("member:write")"#.into(),
            6 => format!(
                r#"context.method == "{}""#,
                ["GET", "DELETE"].choose(rng).unwrap()
            ),
            7 => r#"context.route == "/tenants/{tenantId}""#.into(),
            8 => r#"context.path like "*/members*""#.into(),
            9 => format!(
                r#"context.sourceIp.isInRange(ip("{}"))"#,
                ["10.0.0.0/8", "10.1.2.3", "2001:db8::/32", "192.0.2.0/24"]
                    .choose(rng)
                    .unwrap()
            ),
            10 => r#"resource.name == "acme""#.into(),
            11 => r#"context.time > datetime("2020-01-01")"#.into(),
            12 => r#"context.sourceIp.isLoopback()"#.into(),
            13 => format!("!({})", self.test(rng)),
            14 => ["true", "false"].choose(rng).unwrap().to_string(),
            _ => r#"resource.status == "active""#.into(),
        }
    }

    fn condition(&self, rng: &mut rand::rngs::StdRng) -> String {
        let tests: Vec<String> = (0..rng.random_range(1..4))
            .map(|_| self.test(rng))
            .collect();
        let joined = tests.join([" && ", " || "].choose(rng).unwrap());
        format!("{} {{ {joined} }}", ["when", "unless"].choose(rng).unwrap())
    }

    fn statement(&self, rng: &mut rand::rngs::StdRng, confined: Option<TenantId>) -> String {
        let effect = ["permit", "forbid"].choose(rng).unwrap();
        let conditions: Vec<String> = (0..rng.random_range(0..3))
            .map(|_| self.condition(rng))
            .collect();
        format!(
            "{effect}({}) {};",
            self.scope(rng, confined),
            conditions.join(" ")
        )
    }
}

/// Seeded random sets, each of global statements and of tenants' own
/// (confined to their tenant, permits among them but none that matches
/// on roles, which a tenant's set never holds), decided by the index over every action, callers
/// with and without roles and permissions, tenants with and without an
/// item and their own sets, global routes, both address families and two
/// methods: the verdict is always Cedar's over the whole set with the
/// whole context. Seeds are fixed, so a failure repeats.
#[test]
fn the_index_decides_as_the_whole_set_does_over_random_sets() {
    let (t, other, gone) = (
        TenantId::generate(),
        TenantId::generate(),
        TenantId::generate(),
    );
    let ana = user();
    let bob = crate::testing::user_item(UserId::generate(), "bob@corp.example", &[]);
    let mut suspended = crate::testing::user_item(UserId::generate(), "sue@corp.example", &[]);
    suspended.status = crate::model::values::UserStatus::Suspended;
    let roles = [RoleId::generate(), RoleId::generate()];
    let parts = Parts {
        users: [ana.user_id, bob.user_id],
        roles,
        tenants: [t, other, gone],
        actions: schema().actions.iter().cloned().collect(),
    };
    let (tenant_t, tenant_other) = (tenant(t), tenant(other));
    let with_roles = [roles[0]];
    let writer = [Permission::parse("member:write").unwrap()];
    let callers: [(&User, &[RoleId], &[Permission]); 3] = [
        (&ana, &[], &[]),
        (&bob, &with_roles, &writer),
        (&suspended, &roles, &[]),
    ];
    let (mut cases, mut tenant_permits) = (0, 0);
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..6u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xCEDA_0000 + seed);
        // A tenant's own set holds no permit that matches on roles (its
        // loader sets them aside): those become forbids; its other
        // permits stay.
        let statement = |rng: &mut rand::rngs::StdRng, confined| {
            let mut s = parts.statement(rng, confined);
            if confined.is_some()
                && super::super::statement::matches_on_roles(
                    &cedar_policy::Policy::parse(None, s.as_str()).unwrap(),
                )
            {
                s.replace_range(..6, "forbid");
            }
            s
        };
        // Sets small and large: a small one often matches nothing.
        let size = [2, 5, 12, 30, 30, 30][seed as usize];
        let global: Vec<String> = (0..size).map(|_| statement(&mut rng, None)).collect();
        let own_t: Vec<String> = (0..8).map(|_| statement(&mut rng, Some(t))).collect();
        let own_gone: Vec<String> = (0..4).map(|_| statement(&mut rng, Some(gone))).collect();
        tenant_permits += own_t
            .iter()
            .chain(&own_gone)
            .filter(|s| s.starts_with("permit"))
            .count();
        let items: Vec<Policy> = global
            .iter()
            .chain(&own_t)
            .chain(&own_gone)
            .enumerate()
            .map(|(i, s)| item(&format!("p-{seed}-{i:02}"), s))
            .collect();
        let (global_items, own_items) = items.split_at(global.len());
        let (t_items, gone_items) = own_items.split_at(own_t.len());
        let indexed = Policies::build(global_items);
        let set_t = Policies::build_tenant(t_items, None, t);
        let set_gone = Policies::build_tenant(gone_items, None, gone);
        assert!(
            indexed.rejected().is_empty()
                && set_t.rejected().is_empty()
                && set_gone.rejected().is_empty(),
            "seed {seed}: a generated statement was rejected: {:?} {:?} {:?}",
            indexed.rejected(),
            set_t.rejected(),
            set_gone.rejected()
        );
        let whole = Whole::of(&items);
        let places = [
            Some((&t, Some(&tenant_t), Some(&set_t))),
            Some((&other, Some(&tenant_other), None)),
            Some((&gone, None, Some(&set_gone))),
            None,
        ];
        for place in places {
            for (who, held_roles, permissions) in callers {
                for ip in ["10.1.2.3", "192.0.2.1", "127.0.0.1", "2001:db8::1"] {
                    for method in ["GET", "DELETE"] {
                        for action in &parts.actions {
                            let subject = Subject {
                                user: who,
                                tenant: place.map(|(id, item, _)| (id, item)),
                                roles: held_roles,
                                permissions,
                                own: place.and_then(|(_, _, own)| own),
                            };
                            let facts = Facts {
                                method: method.into(),
                                path: format!(
                                    "/tenants/{}/members",
                                    place.map_or(String::new(), |p| p.0.to_string())
                                ),
                                ..facts(ip)
                            };
                            let got = compared(indexed.decide(&subject, action, || facts.clone()));
                            let want = whole.verdict(&subject, action, &facts);
                            assert_eq!(
                                got,
                                want,
                                "seed {seed}: {action} by {} on {:?} from {ip} ({method})",
                                who.email.as_str(),
                                place.map(|p| p.0)
                            );
                            let kind = format!("{want:?}");
                            seen.insert(kind.split(['(', ' ']).next().unwrap().to_string());
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases} cases");
    assert!(
        tenant_permits > 5,
        "{tenant_permits} permits in tenants' sets"
    );
    // Every kind of verdict was among them: permits, forbids, errors and
    // no match.
    assert_eq!(seen.len(), 4, "{seen:?}");
}
