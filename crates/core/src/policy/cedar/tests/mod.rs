//! Tests of the Cedar policies: what a statement is found to read and
//! match on, the check before a statement is stored, and decisions over
//! sets of every shape checked against Cedar over the whole set.

mod equivalence;

use super::entities::*;
use super::reads::*;
use super::schema::*;
use super::set::*;
use super::statement::*;
use crate::clock::now;
use crate::model::items::{Policy, Stamp, Tenant, User};
use crate::model::values::{
    Email, Permission, PolicyId, PolicyName, RoleId, TenantId, TenantName, UserId,
};

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
        platform: false,
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
/// none), and of those only the groups whose preconditions may hold, and leaves
/// the address and time out of the context when no policy evaluated reads
/// them; a tenant's own policies come from its own set. Over policies of
/// every action form, scope, precondition (the scope's principal, role and
/// resource type, a first test on the caller's attributes, roles and
/// permissions, the method, path or route, the address in IPv4 and IPv6),
/// effect and condition, and over every action, callers with and without
/// roles, tenants with and without an item, global routes and addresses of
/// both families, the verdict is the one Cedar gives for the whole set
/// with the whole context.
#[test]
fn the_index_decides_as_the_whole_set_does() {
    let (t, other, gone) = (
        TenantId::generate(),
        TenantId::generate(),
        TenantId::generate(),
    );
    let (ana, bob) = (
        user(),
        crate::testing::user_item(UserId::generate(), "bob@corp.example", &[]),
    );
    let role = RoleId::generate();
    let (a, b) = (ana.user_id, bob.user_id);
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
        // Preconditions: the scope's principal, role and resource type.
        format!(r#"forbid(principal == User::"{b}", action == Action::"member:read", resource);"#),
        format!(r#"permit(principal in Role::"{role}", action, resource is Tenant);"#),
        format!(r#"forbid(principal in Role::"{role}", action == Action::"tenant:read", resource is Platform);"#),
        r#"forbid(principal, action == Action::"member:read", resource == Platform::"platform");"#.to_string(),
        // Preconditions: the first test of the first `when`, then a test that
        // errors (a tenant with no item has no name) where it is reached.
        r#"forbid(principal, action == Action::"member:read", resource) when { principal.emailDomain == "corp.example" && resource.name == "acme" };"#.to_string(),
        r#"forbid(principal, action == Action::"member:write", resource) when { "ana@example.com" == principal.email && resource.name == "acme" };"#.to_string(),
        r#"permit(principal, action == Action::"member:read", resource) when { principal.status == "active" };"#.to_string(),
        format!(r#"forbid(principal, action == Action::"tenant:update", resource) when {{ principal.roles.contains("{role}") && resource.status == "active" }};"#),
        r#"forbid(principal, action == Action::"tenant:update", resource) when { principal.permissions.contains("member:write") };"#.to_string(),
        r#"forbid(principal, action == Action::"member:read", resource) when { context.method == "DELETE" && resource.name == "acme" };"#.to_string(),
        r#"forbid(principal, action == Action::"member:read", resource) when { context.route == "/tenants/{tenantId}" };"#.to_string(),
        r#"forbid(principal, action == Action::"member:write", resource) when { context.sourceIp.isInRange(ip("10.1.0.0/16")) && resource.name == "acme" };"#.to_string(),
        r#"forbid(principal, action == Action::"member:write", resource) when { context.sourceIp.isInRange(ip("2001:db8::/32")) };"#.to_string(),
        r#"forbid(principal, action == Action::"member:write", resource) when { context.sourceIp.isInRange(ip("10.1.2.3")) };"#.to_string(),
        // Not a precondition: a second condition, an `unless`, an `||`.
        r#"forbid(principal, action == Action::"member:read", resource) when { true } when { principal.emailDomain == "nowhere.example" };"#.to_string(),
        r#"forbid(principal, action == Action::"member:read", resource) unless { principal.emailDomain == "example.com" };"#.to_string(),
        r#"forbid(principal, action == Action::"role:read", resource) when { principal.emailDomain == "x.example" || context.method == "GET" };"#.to_string(),
        // A tenant's own (see below).
        format!(r#"forbid(principal, action == Action::"member:read", resource in Tenant::"{t}") when {{ context.sourceIp.isInRange(ip("192.0.2.0/24")) }};"#),
        format!(r#"forbid(principal == User::"{a}", action, resource in Tenant::"{gone}");"#),
    ];
    let items: Vec<Policy> = statements
        .iter()
        .enumerate()
        .map(|(i, s)| item(&format!("p-{i:02}"), s))
        .collect();
    // The last two live in their tenants' own sets; the rest globally.
    let (global_items, own_items) = items.split_at(items.len() - 2);
    let indexed = Policies::build(global_items);
    let own_t = Policies::build_tenant(&own_items[..1], None, t);
    let own_gone = Policies::build_tenant(&own_items[1..], None, gone);
    assert!(own_t.rejected().is_empty() && own_gone.rejected().is_empty());
    let whole = equivalence::Whole::of(&items);
    let (tenant_t, tenant_other) = (tenant(t), tenant(other));
    let actions: Vec<String> = schema().actions.iter().cloned().collect();
    let mut seen = std::collections::BTreeSet::new();
    let with_role = [role];
    let writer = [Permission::parse("member:write").unwrap()];
    let callers: [(&User, &[RoleId], &[Permission]); 3] = [
        (&ana, &[], &[]),
        (&bob, &with_role, &writer),
        (&ana, &with_role, &[]),
    ];
    let places = [
        Some((&t, Some(&tenant_t), Some(&own_t))),
        Some((&other, Some(&tenant_other), None)),
        Some((&gone, None, Some(&own_gone))),
        None,
    ];
    let mut cases = 0;
    for place in places {
        for (who, roles, permissions) in callers {
            for ip in ["10.1.2.3", "192.0.2.1", "127.0.0.1", "2001:db8::1"] {
                for (method, route) in [
                    ("GET", "/tenants/{tenantId}/members"),
                    ("DELETE", "/tenants/{tenantId}"),
                ] {
                    for action in &actions {
                        let subject = Subject {
                            user: who,
                            tenant: place.map(|(id, item, _)| (id, item)),
                            roles,
                            permissions,
                            own: place.and_then(|(_, _, own)| own),
                        };
                        let facts = Facts {
                            method: method.into(),
                            route: route.into(),
                            path: format!(
                                "/tenants/{}/members",
                                place.map_or(String::new(), |p| p.0.to_string())
                            ),
                            ..facts(ip)
                        };
                        let got = equivalence::compared(
                            indexed.decide(&subject, action, || facts.clone()),
                        );
                        let want = whole.verdict(&subject, action, &facts);
                        assert_eq!(
                            got,
                            want,
                            "{action} by {} holding {roles:?} {permissions:?} on {:?} from {ip} ({method} {route})",
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
    // Every kind of verdict was among the cases.
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(cases > 2000, "{cases} cases");
}

/// Preconditions are found where Cedar can say false without an error, and
/// nowhere else.
#[test]
fn preconditions_come_from_the_scope_and_the_first_test_only() {
    let preconditions = |statement: &str| {
        let policy = cedar_policy::Policy::parse(None, statement).unwrap();
        format!("{:?}", super::preconditions::Precondition::of(&policy))
    };
    let role = RoleId::generate();
    assert_eq!(
        preconditions(&format!(
            r#"permit(principal in Role::"{role}", action, resource is Tenant) when {{ context.sourceIp.isInRange(ip("10.0.0.0/8")) && context.time > datetime("2020-01-01") }};"#
        )),
        format!(
            r#"[Role(Some({role:?})), OnTenant, InRange(IpRange {{ addr: 10.0.0.0, prefix: 8 }})]"#
        )
    );
    assert_eq!(
        preconditions(
            r#"forbid(principal, action, resource) when { principal.permissions.contains("x:y") };"#
        ),
        r#"[HoldsPermission("x:y")]"#
    );
    // An `unless`: its `||` chain's leftmost test, negated.
    assert_eq!(
        preconditions(
            r#"forbid(principal, action, resource) unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) || resource.name == "acme" };"#
        ),
        r#"[Not(InRange(IpRange { addr: 10.0.0.0, prefix: 8 }))]"#
    );
    for none in [
        r#"forbid(principal, action, resource) unless { resource.name == "acme" || principal.emailDomain == "a.example" };"#,
        r#"forbid(principal, action, resource) unless { principal.emailDomain == "a.example" && context.method == "GET" };"#,
        r#"forbid(principal, action, resource) when { true } unless { principal.emailDomain == "a.example" };"#,
        r#"forbid(principal, action, resource) when { resource.name == "acme" && principal.emailDomain == "a.example" };"#,
        r#"forbid(principal, action, resource) when { principal.emailDomain == context.method };"#,
        r#"forbid(principal, action, resource) when { context.sourceIp.isInRange(ip("::ffff:1.2.3.4/120")) };"#,
    ] {
        assert_eq!(preconditions(none), "[]", "{none}");
    }
}

/// A tenant's own set holds only that tenant's policies and no permit
/// keyed on roles held: anything else there (a hand-made item) cannot be
/// used, so it denies in that tenant, and reaches no other.
#[test]
fn a_tenants_own_set_holds_only_its_own() {
    let (t, other) = (TenantId::generate(), TenantId::generate());
    let role = RoleId::generate();
    let set = Policies::build_tenant(
        &[
            item(
                "ok",
                &format!(
                    r#"forbid(principal, action, resource in Tenant::"{t}") when {{ context.method == "DELETE" }};"#
                ),
            ),
            item(
                "elsewhere",
                &format!(r#"forbid(principal, action, resource in Tenant::"{other}");"#),
            ),
            item("global", r#"forbid(principal, action, resource);"#),
            item(
                "keyed",
                &format!(
                    r#"permit(principal in Role::"{role}", action, resource in Tenant::"{t}");"#
                ),
            ),
        ],
        None,
        t,
    );
    let rejected: Vec<&str> = set.rejected().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(rejected, ["elsewhere", "global", "keyed"]);
    let u = user();
    let empty = Policies::default();
    let tenant_t = tenant(t);
    let here = Subject {
        user: &u,
        tenant: Some((&t, Some(&tenant_t))),
        roles: &[],
        permissions: &[],
        own: Some(&set),
    };
    assert!(matches!(
        empty.decide(&here, "member:read", || facts("10.0.0.1")),
        Verdict::Error { .. }
    ));
    let global = Subject {
        tenant: None,
        ..here
    };
    assert_eq!(
        empty.decide(&global, "member:read", || facts("10.0.0.1")),
        Verdict::NoMatch,
        "a tenant's set is never read on a global route"
    );
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
            own: None,
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
        own: None,
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
    assert!(matches!(&verdict, Verdict::Error { policies, .. } if policies[0].name == "no-acme"));
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
            own: None,
        };
        set.decide(&subject, "tenant:read", || facts("10.0.0.1"))
    };
    assert!(matches!(on(&a, &ta), Verdict::Forbid(_)));
    assert_eq!(on(&b, &tb), Verdict::NoMatch);
    assert!(
        set.apply_to(Some(&a), None) && !set.apply_to(Some(&b), None) && !set.apply_to(None, None)
    );
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

/// Break glass: no set locks a `*` holder out of the `policy:` actions, a
/// `forbid` of everything, one that always fails to evaluate and one
/// that does not parse (an instance with no good set) alike; everything
/// else they ask is denied by it.
#[test]
fn a_platform_admin_can_always_manage_policies() {
    let mut root = user();
    root.effective_permissions = vec![Permission::parse("*").unwrap()];
    let standing = Standing {
        user: Some(&root),
        tenant: None,
        grant: None,
        own: None,
    };
    for (name, statement) in [
        (
            "always-fails",
            r#"forbid(principal, action, resource) when { resource.name == "legacy" };"#,
        ),
        ("unparsable", "forbid(principal, action, resource) when {"),
        ("lock-out", "forbid(principal, action, resource);"),
    ] {
        let set = Policies::build([&item(name, statement)]);
        let judge = |action| set.judge(&standing, action, false, || facts("10.0.0.1"));
        assert!(judge("policy:delete").allowed, "{name}");
        assert!(judge("policy:update").allowed, "{name}");
        assert!(!judge("user:read").allowed, "{name}");
    }
    let everything = Policies::build([&item("lock-out", "forbid(principal, action, resource);")]);
    let judge = |action| everything.judge(&standing, action, false, || facts("10.0.0.1"));
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
        own: None,
    };
    let unkeyed = AnswerCaching {
        keyed_on_source_ip: false,
        result_ttl_seconds: 300,
    };
    let keyed = AnswerCaching {
        keyed_on_source_ip: true,
        ..unkeyed
    };
    let judged =
        Policies::build_under([&office], Some(unkeyed))
            .judge(&standing, "user:read", true, || facts("10.0.0.1"));
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
                    own: None,
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
        // Touching a wildcard, or with no `/` at all.
        format!(r#"context.path like "*{lower}*""#),
        format!(r#"context.path like "*{lower}/members""#),
        r#"context.path like "*%73ecret*""#.to_string(),
    ] {
        let err = check(&refused).unwrap_err();
        assert!(err.message.contains("never match"), "{refused}: {err}");
    }
    assert!(check(&format!(r#"context.path like "/tenants/{t}/*""#)).is_ok());
    assert!(check(&format!(r#"context.path like "*{t}*""#)).is_ok());
    assert!(check(r#"context.path like "*/docs/read*""#).is_ok());
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
        own: None,
    };
    let verdict = set.decide(&subject, "user:read", || facts("10.0.0.1"));
    assert!(matches!(&verdict, Verdict::Error { policies, .. } if policies[0].name == "broken"));
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

#[test]
fn context_time_is_any_rfc_3339_instant_in_utc() {
    let utc = Some("2026-11-24T10:00:00Z".to_string());
    for spelled in [
        "2026-11-24T10:00:00Z",
        "2026-11-24T12:00:00+02:00",
        "2026-11-24T05:30:00-04:30",
        "2026-11-24T10:00:00.750Z",
        "2026-11-24t10:00:00z",
    ] {
        assert_eq!(Facts::time_from(spelled), utc, "{spelled}");
    }
    for bad in [
        "2026-11-24 10:00",
        "2026-11-24T10:00:00",
        " 2026-11-24T10:00:00Z",
        "yesterday",
        "",
    ] {
        assert_eq!(Facts::time_from(bad), None, "{bad}");
    }
}

#[test]
fn a_refused_statement_names_no_internal_type_nor_the_id_it_was_checked_under() {
    let schema = schema();
    for statement in [
        r#"forbid(principal, action, resource) when { context.sourceIp == "10.0.0.1" };"#,
        r#"forbid(principal, action, resource) when { resource.nothing == 1 };"#,
        r#"permit(principal, action, resource) when { principal in resource.owner };"#,
    ] {
        let e = schema.check(&id(), statement).unwrap_err();
        assert!(
            !e.message.contains(id().as_str())
                && !e.message.contains("for policy")
                && !e.message.contains("__cedar"),
            "{statement}: {}",
            e.message
        );
    }
}
