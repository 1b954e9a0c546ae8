//! The audit against DynamoDB Local: drift of every kind planted at random
//! (as a point-in-time restore or a bug would leave it, written straight
//! into the table) is found exactly, repaired, and gone on the next run;
//! and a repair computed before the table changed changes nothing.

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use authz_core::clock::now;
use authz_core::model::items::{
    EmailOfUser, Entity, RoleMember, TenantGrant, TenantPolicyDigest, User, UserEmailGuard,
    UserLookup, UserPhoneGuard,
};
use authz_core::model::keys::{self, Holder, PrimaryKey};
use authz_core::model::values::{Email, Permission, RoleId, TenantGrantId, TenantId, UserId};
use authz_core::store::integrity::Problem;
use authz_core::testing::{new_user, new_user_with, role, tenant};
use authz_core::{Error, Store};
use recompute::audit;
use testkit::TestTable;

type Expected = BTreeSet<(Problem, &'static str, String)>;

fn finding(
    problem: Problem,
    item_type: &'static str,
    key: &PrimaryKey,
) -> (Problem, &'static str, String) {
    (problem, item_type, key.to_string())
}

/// A tenant with its members, each a user with phone and username, a
/// tenant grant of `viewer` and the global role `support`.
struct World {
    table: TestTable,
    /// Provisioning's store: how the fixtures are made.
    store: Store,
    /// The operator's store: what `make audit` runs with.
    operator: Store,
    viewer: RoleId,
    /// A role nobody holds.
    spare: RoleId,
    tenants: Vec<TenantId>,
    users: Vec<User>,
}

impl World {
    async fn new(tenants: usize, users: usize) -> Self {
        let table = TestTable::create().await;
        let store = Store::new(table.client_for("provisioning"), table.name.clone());
        let operator = Store::new(table.client.clone(), table.name.clone());
        let viewer = role(&store, "tenant", "viewer", &["ticket:read"])
            .await
            .role_id;
        let spare = role(&store, "tenant", "spare", &["ticket:write"])
            .await
            .role_id;
        let support = role(&store, "global", "support", &["user:read"])
            .await
            .role_id;
        let mut world = Self {
            table,
            store,
            operator,
            viewer,
            spare,
            tenants: Vec::new(),
            users: Vec::new(),
        };
        for t in 0..tenants {
            let tenant = tenant(&world.store, &format!("tenant-{t}")).await;
            world.tenants.push(tenant.tenant_id);
        }
        for u in 0..users {
            let new = new_user_with(
                &format!("user{u}@example.com"),
                Some(&format!("+1555000{u:04}")),
                Some(&format!("user{u}")),
                &[support],
            );
            let user = world
                .store
                .create_user(&new, &authz_core::Caller::OPERATOR)
                .await
                .unwrap();
            let tenant = world.tenants[u % tenants];
            world
                .store
                .put_tenant_grant(
                    &tenant,
                    &user.user_id,
                    &[viewer],
                    &authz_core::Caller::OPERATOR,
                )
                .await
                .unwrap();
            world.users.push(user);
        }
        world
    }

    async fn delete_raw(&self, key: &PrimaryKey) {
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .key(
                "PK",
                aws_sdk_dynamodb::types::AttributeValue::S(key.pk.clone()),
            )
            .key(
                "SK",
                aws_sdk_dynamodb::types::AttributeValue::S(key.sk.clone()),
            )
            .send()
            .await
            .unwrap();
    }

    async fn grant(&self, user: &User) -> TenantGrant {
        let grants = self
            .store
            .user_grants(&user.user_id, &authz_core::PageRequest::default())
            .await
            .unwrap();
        grants
            .items
            .into_iter()
            .next()
            .expect("each user has a grant")
    }

    async fn audit(&self, repair: bool) -> audit::Report {
        audit::run(&self.operator, repair).await.unwrap()
    }

    /// Applies the repair of `report`'s only finding, computed before what
    /// it rests on changed: refused, nothing written.
    async fn refused(&self, report: &audit::Report) {
        assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
        let outcome = self
            .operator
            .repair(report.findings[0].repair.as_ref().unwrap())
            .await;
        assert!(
            matches!(outcome, Err(Error::PreconditionFailed { .. })),
            "{outcome:?}"
        );
    }
}

fn found(report: &audit::Report) -> Expected {
    report
        .findings
        .iter()
        .map(|f| finding(f.problem, f.item_type, &f.key))
        .collect()
}

/// Plants one kind of drift on `user` (each plant gets its own user) and
/// returns what the audit must find.
async fn plant(w: &World, kind: usize, user: &User) -> Expected {
    let mut expected = Expected::new();
    let holder = Holder::Global {
        user_id: user.user_id,
    };
    let grant = w.grant(user).await;
    let user_key = keys::user(&user.user_id);
    match kind {
        // The user item is lost: its grant is an orphan, its guards, its
        // list entry, its email address and every link of its grant and its
        // global role stray.
        0 => {
            for address in w.store.user_emails(&user.user_id).await.unwrap() {
                expected.insert(finding(Problem::Stray, "EmailAddress", &address.key()));
            }
            w.delete_raw(&user_key).await;
            expected.insert(finding(Problem::Orphan, "TenantGrant", &grant.key()));
            expected.insert(finding(
                Problem::Stray,
                "RoleMember",
                &keys::role_member(&w.viewer, &grant.holder()),
            ));
            for role in &user.roles {
                expected.insert(finding(
                    Problem::Stray,
                    "RoleMember",
                    &keys::role_member(role, &holder),
                ));
            }
            expected.insert(finding(
                Problem::Stray,
                "UserEmail",
                &keys::user_email_guard(&user.email),
            ));
            expected.insert(finding(
                Problem::Stray,
                "UserPhone",
                &keys::user_phone_guard(user.phone.as_ref().unwrap()),
            ));
            expected.insert(finding(
                Problem::Stray,
                "UserPreferredUsername",
                &keys::user_preferred_username_guard(user.preferred_username.as_ref().unwrap()),
            ));
            expected.insert(finding(
                Problem::Stray,
                "UserLookup",
                &keys::user_lookup(&user.user_id),
            ));
            expected.insert(finding(
                Problem::Stray,
                "MemberLookup",
                &keys::member_lookup(&grant.tenant_id, &user.user_id),
            ));
        }
        // A link the grant implies is lost: the role's changes would never
        // reach the grant.
        1 => {
            let link = keys::role_member(&w.viewer, &grant.holder());
            w.delete_raw(&link).await;
            expected.insert(finding(Problem::Missing, "RoleMember", &link));
        }
        // A link that names another incarnation of the grant.
        2 => {
            let mut link = RoleMember::new(
                w.viewer,
                grant.holder(),
                Some(TenantGrantId::generate()),
                &now(),
            );
            link.stamp.version = 7;
            w.table.seed(std::slice::from_ref(&link)).await;
            expected.insert(finding(Problem::Wrong, "RoleMember", &link.key()));
        }
        // A link of a holder that does not hold the role.
        3 => {
            let link =
                RoleMember::new(w.spare, grant.holder(), Some(grant.tenant_grant_id), &now());
            w.table.seed(std::slice::from_ref(&link)).await;
            expected.insert(finding(Problem::Stray, "RoleMember", &link.key()));
        }
        // A guard for nobody: the address can never be used again.
        4 => {
            let guard = UserEmailGuard::new(
                EmailOfUser {
                    email: Email::parse(&format!("ghost-{}@example.com", user.user_id)).unwrap(),
                    user_id: UserId::generate(),
                },
                &now(),
            );
            w.table.seed(std::slice::from_ref(&guard)).await;
            expected.insert(finding(Problem::Stray, "UserEmail", &guard.key()));
        }
        // A guard lost: anybody could take the user's phone number.
        5 => {
            let guard = keys::user_phone_guard(user.phone.as_ref().unwrap());
            w.delete_raw(&guard).await;
            expected.insert(finding(Problem::Missing, "UserPhone", &guard));
        }
        // A list entry that says another address.
        6 => {
            let mut entry = UserLookup::of(user);
            entry.email = Email::parse(&format!("old-{}@example.com", user.user_id)).unwrap();
            w.table.seed(std::slice::from_ref(&entry)).await;
            expected.insert(finding(Problem::Wrong, "UserLookup", &entry.key()));
        }
        // The user's email changed without its guard or its address to the
        // first user's address: two users claim one address, and the
        // user's primary address is not its email (both need a person).
        7 => {
            let mut changed = user.clone();
            changed.email = w.users[0].email.clone();
            let primary = w.store.user_emails(&user.user_id).await.unwrap();
            w.table.seed(std::slice::from_ref(&changed)).await;
            expected.insert(finding(
                Problem::Duplicate,
                "UserEmail",
                &keys::user_email_guard(&changed.email),
            ));
            expected.insert(finding(Problem::Wrong, "EmailAddress", &primary[0].key()));
            expected.insert(finding(
                Problem::Wrong,
                "UserLookup",
                &keys::user_lookup(&user.user_id),
            ));
            expected.insert(finding(
                Problem::Wrong,
                "MemberLookup",
                &keys::member_lookup(&grant.tenant_id, &user.user_id),
            ));
        }
        // The role ref of the spare role is lost: nobody can give it.
        8 => {
            let key = keys::role_ref(&w.spare);
            w.delete_raw(&key).await;
            expected.insert(finding(Problem::Missing, "RoleRef", &key));
        }
        // The ref of an invitation to the user's address is lost: nobody can
        // answer it by its id.
        10 => {
            let new = authz_core::NewInvitation {
                email: user.email.clone(),
                roles: vec![w.viewer],
                days: 7,
            };
            let invitation = w
                .store
                .invite(&w.tenants[0], &new, &authz_core::Caller::OPERATOR)
                .await
                .unwrap();
            let key = keys::invitation_ref(&invitation.invitation_id);
            w.delete_raw(&key).await;
            expected.insert(finding(Problem::Missing, "InvitationRef", &key));
        }
        // The guard of an added, verified address is lost: anybody could
        // take it.
        9 => {
            let email = Email::parse(&format!("second-{}@example.com", user.user_id)).unwrap();
            let (added, _) = w.store.add_email(&user.user_id, &email).await.unwrap();
            w.store
                .verify_email(
                    &user.user_id,
                    &added.email_id,
                    &authz_core::Proof::Vouched,
                    &authz_core::Caller::OPERATOR,
                )
                .await
                .unwrap();
            let guard = keys::user_email_guard(&email);
            w.delete_raw(&guard).await;
            expected.insert(finding(Problem::Missing, "UserEmail", &guard));
        }
        // A policy's ref is lost: another policy could take its id.
        11 => {
            let name = format!("p-{}", user.user_id.to_string().to_lowercase());
            let policy = w
                .store
                .create_policy(&authz_core::testing::new_policy(&name, None, None), None)
                .await
                .unwrap();
            let key = keys::policy_ref(&policy.policy_id);
            w.delete_raw(&key).await;
            expected.insert(finding(Problem::Missing, "PolicyRef", &key));
        }
        // A grant's entry in its tenant's member search is lost (as for
        // every grant written before the entries existed): a member search
        // would not find them.
        12 => {
            let key = keys::member_lookup(&grant.tenant_id, &user.user_id);
            w.delete_raw(&key).await;
            expected.insert(finding(Problem::Missing, "MemberLookup", &key));
        }
        // A tenant's digest says its set has no statement while it has
        // one: decisions would skip the tenant's forbid.
        13 => {
            let own = authz_core::testing::tenant_forbid(
                "no-deletes-here",
                grant.tenant_id,
                "member:write",
            );
            w.store.create_policy(&own, None).await.unwrap();
            let digest = TenantPolicyDigest::none(grant.tenant_id, &now());
            w.table.seed(std::slice::from_ref(&digest)).await;
            expected.insert(finding(Problem::Wrong, "TenantPolicyDigest", &digest.key()));
        }
        _ => unreachable!(),
    }
    expected
}

const KINDS: usize = 14;

/// Kinds planted on something shared (the first user's address, the spare
/// role, a tenant's policies), so planted once.
const SHARED: [usize; 3] = [7, 8, 13];

/// Each kind of drift, some of them at random, on distinct users: the
/// audit finds exactly what was planted and the permissions that drift,
/// `REPAIR` fixes all of it but what needs a person, and the next audit
/// finds only that.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_finds_and_repairs_every_kind_of_drift() {
    let seed: u64 = std::env::var("AUDIT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("AUDIT_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let w = World::new(2, 26).await;
    assert!(w.audit(false).await.clean(), "a fresh table is clean");

    // Every kind at least once, some twice (not the two whose target is
    // shared), in random order, on users picked at random; the first user
    // is left alone (the duplicate's other owner and the drifting holder).
    let mut kinds: Vec<usize> = (0..KINDS).collect();
    kinds.extend((0..KINDS).filter(|k| !SHARED.contains(k) && rng.random_bool(0.3)));
    kinds.shuffle(&mut rng);
    let mut users: Vec<&User> = w.users.iter().skip(1).collect();
    users.shuffle(&mut rng);
    assert!(kinds.len() <= users.len(), "a user for every plant");
    let mut expected = Expected::new();
    for (kind, user) in kinds.iter().zip(users) {
        expected.extend(plant(&w, *kind, user).await);
    }
    // And one holder's permissions drift from its roles.
    let drifting = w.grant(&w.users[0]).await;
    let mut tampered = drifting.clone();
    tampered.effective_permissions = vec![Permission::parse("*").unwrap()];
    w.table.seed(&[tampered]).await;

    let report = w.audit(false).await;
    assert_eq!(found(&report), expected, "seed {seed}");
    assert_eq!(report.drifted.len(), 1, "seed {seed}: {:?}", report.drifted);
    assert_eq!(report.drifted[0].holder, drifting.holder());

    // A duplicate address and a primary address that is not the user's
    // email need a person's decision.
    let needs_person = |(p, t, _): &(Problem, &str, String)| {
        *p == Problem::Duplicate || (*p == Problem::Wrong && *t == "EmailAddress")
    };
    let left: Expected = expected
        .iter()
        .filter(|f| needs_person(f))
        .cloned()
        .collect();
    let repaired = w.audit(true).await;
    assert_eq!(
        repaired.repaired,
        expected.len() - left.len() + 1,
        "seed {seed}: {:?}",
        repaired.unrepaired
    );
    assert_eq!(repaired.unrepaired.len(), left.len());

    let after = w.audit(false).await;
    assert!(after.drifted.is_empty(), "seed {seed}: {:?}", after.drifted);
    assert_eq!(found(&after), left, "seed {seed}");
}

/// What a user sees of the repairs: a lost phone guard is back (nobody else
/// can take the number), a stray email guard is gone (the address can be
/// used), an orphan grant no longer lists its member.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repaired_guards_and_grants_behave_as_before() {
    let w = World::new(1, 3).await;
    let phone_owner = &w.users[0];
    let lost = &w.users[1];
    let phone = phone_owner.phone.clone().unwrap();
    w.delete_raw(&keys::user_phone_guard(&phone)).await;
    plant(&w, 0, lost).await;
    let ghost = UserEmailGuard::new(
        EmailOfUser {
            email: Email::parse("ghost@example.com").unwrap(),
            user_id: UserId::generate(),
        },
        &now(),
    );
    w.table.seed(&[ghost]).await;
    let report = w.audit(true).await;
    assert!(report.unrepaired.is_empty(), "{:?}", report.unrepaired);

    let taken = new_user_with("someone@example.com", Some(phone.as_str()), None, &[]);
    assert!(matches!(
        w.store.create_user(&taken, &authz_core::Caller::OPERATOR).await,
        Err(Error::Conflict { field }) if field == "phone"
    ));
    let ghost_address = new_user("ghost@example.com", &[]);
    w.store
        .create_user(&ghost_address, &authz_core::Caller::OPERATOR)
        .await
        .expect("the stray guard no longer blocks the address");
    let members = w
        .store
        .tenant_members(&w.tenants[0], &authz_core::PageRequest::default())
        .await
        .unwrap();
    assert!(members.items.iter().all(|g| g.user_id != lost.user_id));
    assert_eq!(members.items.len(), 2);
}

/// Repairs computed from a read are conditioned on it: when the table has
/// changed since (a new user took the phone whose guard was lost, the
/// owner of a stray guard changed), applying them changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repair_computed_before_a_change_changes_nothing() {
    let w = World::new(1, 2).await;
    let first = &w.users[0];
    let phone = first.phone.clone().unwrap();
    w.delete_raw(&keys::user_phone_guard(&phone)).await;
    let second = &w.users[1];
    let stray = keys::role_member(&w.spare, &w.grant(second).await.holder());
    plant(&w, 3, second).await;
    let report = w.audit(false).await;
    assert_eq!(report.findings.len(), 2, "{:?}", report.findings);

    // Meanwhile: another user takes the number (its guard was missing), and
    // the grant whose stray link was found is given the spare role.
    let taker = new_user_with("taker@example.com", Some(phone.as_str()), None, &[]);
    let taker = w
        .store
        .create_user(&taker, &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    w.store
        .put_tenant_grant(
            &w.tenants[0],
            &second.user_id,
            &[w.viewer, w.spare],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();

    for f in &report.findings {
        let outcome = w.operator.repair(f.repair.as_ref().unwrap()).await;
        assert!(
            matches!(
                outcome,
                Err(Error::Conflict { .. }
                    | Error::PreconditionFailed { .. }
                    | Error::NotFound { .. })
            ),
            "{f}: {outcome:?}"
        );
    }
    let guard: UserPhoneGuard = w
        .operator
        .get(&keys::user_phone_guard(&phone), true)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("the taker's guard is in place"));
    assert_eq!(guard.held.user_id, taker.user_id);
    assert!(
        w.operator.get_item(&stray, true).await.unwrap().is_some(),
        "the link the grant now needs is kept"
    );
}

/// A user written before email addresses existed has none: the audit finds
/// its primary address missing and restores it from the user's `email`,
/// unverified, after which the user is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_user_without_addresses_gets_its_primary_address_back() {
    let w = World::new(1, 2).await;
    let user = &w.users[1];
    for address in w.store.user_emails(&user.user_id).await.unwrap() {
        w.delete_raw(&address.key()).await;
    }
    let report = w.audit(false).await;
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    let missing = &report.findings[0];
    assert_eq!(
        (missing.problem, missing.item_type),
        (Problem::Missing, "EmailAddress")
    );
    assert_eq!(missing.owner, Some(keys::user(&user.user_id)));

    let repaired = w.audit(true).await;
    assert_eq!(repaired.repaired, 1, "{:?}", repaired.unrepaired);
    let restored = w.store.user_emails(&user.user_id).await.unwrap();
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0].email, user.email);
    assert!(restored[0].is_primary && !restored[0].is_verified);
    assert!(w.audit(false).await.clean());
}

/// The policy set's counts: missing beside policies (a table from before
/// them) or disagreeing with them, they are found and rewritten from the
/// policies; a repair computed before a policy write moved them changes
/// nothing; and a table from before them is counted exactly by its first
/// policy write, which holds it to the bound from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_policy_counts_are_audited_and_repaired() {
    use authz_core::model::items::PolicyCounts;
    use authz_core::testing::new_policy;
    let w = World::new(1, 1).await;
    let forbid = "forbid(principal, action == Action::\"tenant:delete\", resource);";
    let counts = || async { w.operator.policy_counts(true).await.unwrap() };
    let key = keys::policy_counts();
    assert!(w.audit(false).await.clean(), "no policy, no counts: clean");

    // Written before the counts existed: two policies, no counts.
    for (name, statement) in [("stated", Some(forbid)), ("bare", None)] {
        w.store
            .create_policy(&new_policy(name, None, statement), None)
            .await
            .unwrap();
    }
    w.delete_raw(&key).await;
    let report = w.audit(false).await;
    let missing = Expected::from([finding(Problem::Missing, "PolicyCounts", &key)]);
    assert_eq!(found(&report), missing);
    assert_eq!(w.audit(true).await.repaired, 1);
    let restored = counts().await.expect("restored");
    assert_eq!((restored.policies, restored.statements), (2, 1));
    assert!(w.audit(false).await.clean());

    // Counts that say there is no statement would let every authorizer
    // skip the set: found wrong.
    let mut lying = restored.clone();
    lying.statements = 0;
    lying.stamp = restored.stamp.next(&now());
    w.table.seed(&[lying]).await;
    let report = w.audit(false).await;
    assert_eq!(
        found(&report),
        Expected::from([finding(Problem::Wrong, "PolicyCounts", &key)])
    );
    // A policy write moves them before the repair is applied: it changes
    // nothing, and the next audit computes it again.
    w.store
        .create_policy(&new_policy("later", None, Some(forbid)), None)
        .await
        .unwrap();
    w.refused(&report).await;
    assert_eq!(
        counts().await.unwrap().statements,
        1,
        "the lie moved by one"
    );
    assert_eq!(w.audit(true).await.repaired, 1);
    let fixed: PolicyCounts = counts().await.unwrap();
    assert_eq!((fixed.policies, fixed.statements), (3, 2));

    // A table from before the counts: the first policy write counts the
    // policies there, then adds its own.
    w.delete_raw(&key).await;
    w.store
        .create_policy(&new_policy("first-after", None, Some(forbid)), None)
        .await
        .unwrap();
    let counted = counts().await.unwrap();
    assert_eq!((counted.policies, counted.statements), (4, 3));
    assert!(w.audit(false).await.clean());
}

/// Policy ids: a table from before PolicyRefs keeps working (edits and
/// deletes by id find its policies through GSI1), the audit writes the
/// refs it lacks, reports two policies sharing an id for a person to
/// settle and removes a ref nobody owns; once written, a ref keeps its id
/// from being taken again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn policy_ids_are_audited_and_held_once_repaired() {
    use authz_core::model::items::{Policy, PolicyRef, Stamp};
    use authz_core::model::values::{PolicyId, PolicyName};
    use authz_core::testing::new_policy;
    let w = World::new(1, 1).await;
    let id = |s: &str| PolicyId::parse(s).unwrap();
    // Written before refs existed.
    let kept = w
        .store
        .create_policy(&new_policy("before-a", Some("p-1"), None), None)
        .await
        .unwrap();
    w.store
        .create_policy(&new_policy("before-b", Some("p-2"), None), None)
        .await
        .unwrap();
    for p in ["p-1", "p-2"] {
        w.delete_raw(&keys::policy_ref(&id(p))).await;
    }
    let before = w.store.policy_by_id_consistent(&id("p-1")).await.unwrap();
    assert_eq!(before.as_ref(), Some(&kept), "found through GSI1");
    // p-2's ref names a policy that is gone (code from before refs deleted
    // it): the policy that has the id is found all the same, and its
    // delete takes the ref with it.
    let orphan_ref = |policy_id: &str, name: &str| PolicyRef {
        policy_id: id(policy_id),
        name: PolicyName::parse(name).unwrap(),
        tenant_id: None,
        stamp: Stamp::new(&now()),
    };
    w.table.seed(&[orphan_ref("p-2", "gone-b")]).await;
    let deleted = w.store.delete_policy(&id("p-2")).await.unwrap();
    assert_eq!(deleted.name.as_str(), "before-b");
    assert_eq!(
        w.store.policy_by_id_consistent(&id("p-2")).await.unwrap(),
        None
    );
    assert!(w
        .operator
        .get::<PolicyRef>(&keys::policy_ref(&id("p-2")), true)
        .await
        .unwrap()
        .is_none());

    // A second policy with p-1 (as a table from before refs may hold),
    // and a ref whose policy is gone (its id could never be used again).
    let twin = Policy {
        name: PolicyName::parse("before-c").unwrap(),
        stamp: Stamp::new(&now()),
        ..kept.clone()
    };
    w.table.seed(std::slice::from_ref(&twin)).await;
    w.table.seed(&[orphan_ref("p-9", "gone")]).await;
    let report = w.audit(false).await;
    assert_eq!(
        found(&report),
        Expected::from([
            finding(
                Problem::Duplicate,
                "PolicyRef",
                &keys::policy_ref(&id("p-1"))
            ),
            finding(Problem::Stray, "PolicyRef", &keys::policy_ref(&id("p-9"))),
            // Seeded around the counts, as a restore would.
            finding(Problem::Wrong, "PolicyCounts", &keys::policy_counts()),
        ])
    );
    // Neither twin holds the id: each is reported, for a person.
    let owners: BTreeSet<String> = report
        .findings
        .iter()
        .filter(|f| f.problem == Problem::Duplicate)
        .filter_map(|f| f.owner.as_ref().map(ToString::to_string))
        .collect();
    assert_eq!(
        owners,
        BTreeSet::from([kept.key().to_string(), twin.key().to_string()])
    );
    let repaired = w.audit(true).await;
    assert_eq!((repaired.repaired, repaired.unrepaired.len()), (2, 2));

    // A person settles the duplicate (here: removes the twin); the next
    // repair writes the ref of the policy left.
    w.delete_raw(&twin.key()).await;
    assert_eq!(w.audit(true).await.repaired, 2, "the ref and the counts");
    assert!(w.audit(false).await.clean());
    let taken = w
        .store
        .create_policy(&new_policy("after", Some("p-1"), None), None)
        .await;
    assert!(
        matches!(&taken, Err(Error::Conflict { field }) if field == "policyId"),
        "{taken:?}"
    );
    assert_eq!(
        w.store.policy_by_id_consistent(&id("p-1")).await.unwrap(),
        Some(kept),
        "found through its ref"
    );
    let freed = w
        .store
        .create_policy(&new_policy("after", Some("p-9"), None), None)
        .await;
    assert!(freed.is_ok(), "the stray ref was removed: {freed:?}");

    // A repair computed from a stray ref, applied after the id was freed
    // and taken again (ids are reused), leaves the new policy's ref alone.
    w.table.seed(&[orphan_ref("p-7", "gone")]).await;
    let report = w.audit(false).await;
    assert_eq!(
        found(&report),
        Expected::from([finding(
            Problem::Stray,
            "PolicyRef",
            &keys::policy_ref(&id("p-7"))
        )])
    );
    w.delete_raw(&keys::policy_ref(&id("p-7"))).await;
    w.store
        .create_policy(&new_policy("reused", Some("p-7"), None), None)
        .await
        .unwrap();
    w.refused(&report).await;
    let again = w
        .store
        .create_policy(&new_policy("reused-again", Some("p-7"), None), None)
        .await;
    assert!(
        matches!(&again, Err(Error::Conflict { field }) if field == "policyId"),
        "the id is still held: {again:?}"
    );
    assert!(w.audit(false).await.clean());
}

/// A guard the audit read before the address that implies it (a parallel
/// scan reads the user's partition and the guard in different segments):
/// found stray, and its repair, applied after the address was added,
/// changes nothing, because adding an address moves the user's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_guard_added_during_the_scan_is_not_removed_as_stray() {
    let w = World::new(1, 1).await;
    let user = &w.users[0];
    let email = Email::parse("later@example.com").unwrap();
    // The snapshot: the guard there, the address not yet.
    let guard = UserEmailGuard::new(
        EmailOfUser {
            email: email.clone(),
            user_id: user.user_id,
        },
        &now(),
    );
    w.table.seed(std::slice::from_ref(&guard)).await;
    let report = w.audit(false).await;
    assert_eq!(
        found(&report),
        Expected::from([finding(Problem::Stray, "UserEmail", &guard.key())])
    );
    // What happened meanwhile: the address was added and verified, which
    // took its guard.
    w.delete_raw(&guard.key()).await;
    let (added, _) = w.store.add_email(&user.user_id, &email).await.unwrap();
    w.store
        .verify_email(
            &user.user_id,
            &added.email_id,
            &authz_core::Proof::Vouched,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    w.refused(&report).await;
    let held = w
        .operator
        .get::<UserEmailGuard>(&guard.key(), true)
        .await
        .unwrap();
    assert!(held.is_some(), "the address keeps its guard");
    assert!(w.audit(false).await.clean());
}
