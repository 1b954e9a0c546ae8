//! Every access pattern of the table (docs/table.md) against DynamoDB Local returns what was written,
//! and every paged list walks all its pages through opaque cursors.

use crate::common;

use std::future::Future;

use authz_core::model::keys::Holder;
use authz_core::model::values::{
    Email, EmailPrefix, NamePrefix, PolicyId, PolicyName, RoleId, RoleName, RoleScope,
    TenantGrantId, TenantId, TenantName, TenantNamePrefix, UserId, UserStatus,
};
use authz_core::testing::{new_user, policy, role, tenant, user};
use authz_core::{Error, Page, PageRequest};
use common::store;

/// Reads every page of a list with `limit`, returning the items and the
/// number of pages read.
async fn all_pages<T, F, Fut>(limit: i32, read: F) -> (Vec<T>, usize)
where
    F: Fn(PageRequest) -> Fut,
    Fut: Future<Output = authz_core::Result<Page<T>>>,
{
    let mut request = PageRequest::with_limit(limit);
    let mut items = Vec::new();
    let mut pages = 0;
    loop {
        let page = read(request.clone()).await.expect("page reads");
        pages += 1;
        assert!(page.items.len() <= limit as usize);
        items.extend(page.items);
        match request.next(page.next_cursor) {
            Some(next) => request = next,
            None => return (items, pages),
        }
    }
}

#[tokio::test]
async fn tenants_by_id_by_name_and_listed_across_pages() {
    let (_table, store) = store().await;
    let mut created = Vec::new();
    for i in 0..55 {
        created.push(tenant(&store, &format!("Tenant-{i:02}")).await);
    }
    let acme = &created[7];
    assert_eq!(acme.name.as_str(), "tenant-07", "names are lower-cased");

    assert_eq!(
        store.tenant(&acme.tenant_id).await.unwrap().as_ref(),
        Some(acme)
    );
    let by_name = store
        .tenant_by_name(&TenantName::parse("TENANT-07").unwrap())
        .await
        .unwrap();
    assert_eq!(by_name.as_ref(), Some(acme));
    assert_eq!(store.tenant(&TenantId::generate()).await.unwrap(), None);
    assert_eq!(
        store
            .tenant_by_name(&TenantName::parse("nobody").unwrap())
            .await
            .unwrap(),
        None
    );

    // Default page size (50): two pages for 55 tenants, in name order.
    let first = store
        .list_tenants(&TenantNamePrefix::default(), &PageRequest::default())
        .await
        .unwrap();
    assert_eq!(first.items.len(), 50);
    let second = store
        .list_tenants(
            &TenantNamePrefix::default(),
            &PageRequest::default()
                .next(first.next_cursor.clone())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(second.items.len(), 5);
    assert_eq!(second.next_cursor, None);

    let (all, pages) = all_pages(20, |p| {
        let store = store.clone();
        async move { store.list_tenants(&TenantNamePrefix::default(), &p).await }
    })
    .await;
    assert_eq!(pages, 3);
    let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
    let mut expected: Vec<String> = created.iter().map(|t| t.name.to_string()).collect();
    expected.sort();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn users_by_id_by_email_and_listed_by_status() {
    let (_table, store) = store().await;
    let mut created = Vec::new();
    for i in 0..7 {
        created.push(user(&store, &format!("User{i}@Example.com"), &[]).await);
    }
    let u = &created[3];
    assert_eq!(u.email.as_str(), "user3@example.com");
    assert_eq!(u.status, UserStatus::Active);
    assert_eq!(u.stamp.version, 1);

    assert_eq!(store.user(&u.user_id).await.unwrap().as_ref(), Some(u));
    let by_email = store
        .user_by_email(&Email::parse(" USER3@example.COM ").unwrap())
        .await
        .unwrap();
    assert_eq!(by_email.as_ref(), Some(u));
    assert_eq!(
        store
            .user_by_email(&Email::parse("nobody@example.com").unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.user(&UserId::generate()).await.unwrap(), None);

    let (active, pages) = all_pages(3, |p| {
        let store = store.clone();
        async move {
            store
                .list_users(UserStatus::Active, &EmailPrefix::default(), &p)
                .await
        }
    })
    .await;
    assert_eq!(pages, 3);
    let emails: Vec<&str> = active.iter().map(|u| u.email.as_str()).collect();
    assert_eq!(
        emails,
        (0..7)
            .map(|i| format!("user{i}@example.com"))
            .collect::<Vec<_>>()
    );
    let suspended = store
        .list_users(
            UserStatus::Suspended,
            &EmailPrefix::default(),
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert!(suspended.items.is_empty());
}

#[tokio::test]
async fn roles_by_scope_and_name_by_id_and_listed() {
    let (_table, store) = store().await;
    let admin = role(&store, "tenant", "admin", &["ticket:*"]).await;
    let reader = role(&store, "tenant", "reader", &["ticket:read"]).await;
    let platform = role(&store, "global", "admin", &["*"]).await;

    let got = store
        .role(RoleScope::Tenant, &RoleName::parse("admin").unwrap())
        .await
        .unwrap();
    assert_eq!(got.as_ref(), Some(&admin));
    let got = store
        .role(RoleScope::Global, &RoleName::parse("admin").unwrap())
        .await
        .unwrap();
    assert_eq!(got.as_ref(), Some(&platform), "same name, other scope");

    assert_eq!(
        store.role_by_id(&reader.role_id).await.unwrap().as_ref(),
        Some(&reader)
    );
    assert_eq!(
        store
            .role_by_id_consistent(&reader.role_id)
            .await
            .unwrap()
            .as_ref(),
        Some(&reader)
    );
    assert_eq!(store.role_by_id(&RoleId::generate()).await.unwrap(), None);
    assert_eq!(
        store
            .role_by_id_consistent(&RoleId::generate())
            .await
            .unwrap(),
        None
    );

    let (tenant_roles, pages) = all_pages(1, |p| {
        let store = store.clone();
        async move {
            store
                .list_roles(RoleScope::Tenant, &NamePrefix::default(), &p)
                .await
        }
    })
    .await;
    assert!(pages >= 2);
    assert_eq!(tenant_roles, vec![admin.clone(), reader.clone()]);
    let global = store
        .list_roles(
            RoleScope::Global,
            &NamePrefix::default(),
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(global.items, vec![platform]);
    // By the start of the name, in the scope's item collection.
    let starting = |prefix: &str| {
        let store = store.clone();
        let prefix = NamePrefix::parse(prefix).unwrap();
        async move {
            store
                .list_roles(RoleScope::Tenant, &prefix, &PageRequest::default())
                .await
                .unwrap()
                .items
        }
    };
    assert_eq!(starting("rea").await, vec![reader]);
    assert_eq!(starting("ad").await, vec![admin]);
    assert!(starting("zz").await.is_empty());
}

#[tokio::test]
async fn grants_membership_by_user_by_id_and_tenant_members() {
    let (_table, store) = store().await;
    let member = role(&store, "tenant", "member", &["ticket:read"]).await;
    let editor = role(&store, "tenant", "editor", &["ticket:write", "ticket:read"]).await;
    let alice = user(&store, "alice@example.com", &[]).await;
    let mut tenants = Vec::new();
    for i in 0..5 {
        tenants.push(tenant(&store, &format!("t{i}")).await);
    }
    let mut users = vec![alice.clone()];
    for i in 0..6 {
        users.push(user(&store, &format!("u{i}@example.com"), &[]).await);
    }

    // Alice in every tenant; everyone in t0.
    for t in &tenants {
        let w = store
            .put_tenant_grant(
                &t.tenant_id,
                &alice.user_id,
                &[member.role_id, editor.role_id],
                &authz_core::Caller::operator("test"),
            )
            .await
            .unwrap();
        assert!(w.created);
        let perms: Vec<&str> = w
            .grant
            .effective_permissions
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(perms, ["ticket:read", "ticket:write"]);
    }
    let t0 = &tenants[0];
    for u in &users[1..] {
        store
            .put_tenant_grant(
                &t0.tenant_id,
                &u.user_id,
                &[member.role_id],
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
    }

    let membership = store
        .tenant_grant(&t0.tenant_id, &alice.user_id)
        .await
        .unwrap()
        .expect("alice is a member of t0");
    assert_eq!(membership.roles, vec![member.role_id, editor.role_id]);
    assert_eq!(
        store
            .tenant_grant(&t0.tenant_id, &UserId::generate())
            .await
            .unwrap(),
        None
    );

    let by_id = store
        .tenant_grant_by_id(&membership.tenant_grant_id)
        .await
        .unwrap();
    assert_eq!(by_id.as_ref(), Some(&membership));
    assert_eq!(
        store
            .tenant_grant_by_id(&TenantGrantId::generate())
            .await
            .unwrap(),
        None
    );

    let (alice_grants, pages) = all_pages(2, |p| {
        let store = store.clone();
        let id = alice.user_id;
        async move { store.user_grants(&id, &p).await }
    })
    .await;
    assert_eq!(pages, 3);
    let mut got: Vec<TenantId> = alice_grants.iter().map(|g| g.tenant_id).collect();
    let mut want: Vec<TenantId> = tenants.iter().map(|t| t.tenant_id).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);

    let (members, pages) = all_pages(3, |p| {
        let store = store.clone();
        let id = t0.tenant_id;
        async move { store.tenant_members(&id, &p).await }
    })
    .await;
    assert!(pages >= 3);
    let mut got: Vec<UserId> = members.iter().map(|g| g.user_id).collect();
    let mut want: Vec<UserId> = users.iter().map(|u| u.user_id).collect();
    got.sort();
    want.sort();
    assert_eq!(
        got, want,
        "the Tenant item itself is not listed as a member"
    );

    // Role members through the links: member is held by all 7 in t0 plus
    // alice in 4 more tenants; editor only by alice's 5 grants.
    let (links, _) = all_pages(4, |p| {
        let store = store.clone();
        let id = member.role_id;
        async move { store.role_members(&id, &p).await }
    })
    .await;
    assert_eq!(links.len(), 7 + 4);
    assert!(links
        .iter()
        .all(|l| matches!(l.holder(), Holder::Grant { .. })));
    let (editor_links, _) = all_pages(50, |p| {
        let store = store.clone();
        let id = editor.role_id;
        async move { store.role_members(&id, &p).await }
    })
    .await;
    assert_eq!(editor_links.len(), 5);
    assert!(editor_links.iter().all(|l| l.user_id == alice.user_id));

    // Replacing a grant moves its links and recomputes its permissions.
    let w = store
        .put_tenant_grant(
            &t0.tenant_id,
            &alice.user_id,
            &[member.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    assert!(!w.created);
    assert_eq!(w.grant.stamp.version, 2);
    assert_eq!(
        w.grant.tenant_grant_id, membership.tenant_grant_id,
        "same grant, new version"
    );
    assert_eq!(w.grant.effective_permissions.len(), 1);
    let editor_now = store
        .role_members(&editor.role_id, &PageRequest::default())
        .await
        .unwrap();
    assert_eq!(editor_now.items.len(), 4);
}

#[tokio::test]
async fn global_roles_are_linked_to_their_users() {
    let (_table, store) = store().await;
    let platform = role(&store, "global", "platform-admin", &["*"]).await;
    let new = new_user("root@example.com", &[platform.role_id]);
    let root = store
        .create_user(&new, &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    assert_eq!(
        root.effective_permissions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["*"]
    );
    let links = store
        .role_members(&platform.role_id, &PageRequest::default())
        .await
        .unwrap();
    assert_eq!(links.items.len(), 1);
    assert_eq!(
        links.items[0].holder(),
        Holder::Global {
            user_id: root.user_id
        }
    );
}

#[tokio::test]
async fn policies_by_name_by_prefix_and_by_id() {
    let (_table, store) = store().await;
    let enforce = policy(&store, "ticket-tenant-enforce", Some("p-abc123")).await;
    let mut ticket = vec![enforce.clone()];
    for i in 0..4 {
        ticket.push(policy(&store, &format!("ticket-{i}"), None).await);
    }
    let other = policy(&store, "billing-read", None).await;

    let got = store
        .policy_by_name(&PolicyName::parse("ticket-tenant-enforce").unwrap())
        .await
        .unwrap();
    assert_eq!(got.as_ref(), Some(&enforce));
    let got = store
        .policy_by_id(&PolicyId::parse("p-abc123").unwrap())
        .await
        .unwrap();
    assert_eq!(got.as_ref(), Some(&enforce));
    let got = store.policy_by_id(&other.policy_id).await.unwrap();
    assert_eq!(
        got.as_ref(),
        Some(&other),
        "generated ids are looked up the same way"
    );
    assert_eq!(
        store
            .policy_by_id(&PolicyId::parse("p-none").unwrap())
            .await
            .unwrap(),
        None
    );

    let prefix = NamePrefix::parse("ticket-").unwrap();
    let (found, pages) = all_pages(2, |p| {
        let store = store.clone();
        let prefix = prefix.clone();
        async move { store.policies_by_prefix(&prefix, &p).await }
    })
    .await;
    assert!(pages >= 3);
    ticket.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(found, ticket);

    let everything = store
        .policies_by_prefix(&NamePrefix::default(), &PageRequest::default())
        .await
        .unwrap();
    assert_eq!(everything.items.len(), 6);
}

#[tokio::test]
async fn a_cursor_from_another_list_is_refused_without_reading_outside() {
    let (_table, store) = store().await;
    let a = tenant(&store, "a").await;
    let b = tenant(&store, "b").await;
    let r = role(&store, "tenant", "m", &[]).await;
    for i in 0..3 {
        let u = user(&store, &format!("x{i}@example.com"), &[]).await;
        store
            .put_tenant_grant(
                &a.tenant_id,
                &u.user_id,
                &[r.role_id],
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
        store
            .put_tenant_grant(
                &b.tenant_id,
                &u.user_id,
                &[r.role_id],
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
    }
    let page_of_a = store
        .tenant_members(&a.tenant_id, &PageRequest::with_limit(1))
        .await
        .unwrap();
    let cursor = page_of_a.next_cursor.expect("more members of a");
    let err = store
        .tenant_members(
            &b.tenant_id,
            &PageRequest {
                limit: 1,
                cursor: Some(cursor.clone()),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { field, .. } if field == "cursor"),
        "{err:?}"
    );
    let err = store
        .list_tenants(
            &TenantNamePrefix::default(),
            &PageRequest {
                limit: 1,
                cursor: Some(cursor),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { field, .. } if field == "cursor"),
        "{err:?}"
    );
    let err = store
        .list_tenants(
            &TenantNamePrefix::default(),
            &PageRequest {
                limit: 1,
                cursor: Some("garbage".into()),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { field, .. } if field == "cursor"),
        "{err:?}"
    );
}

/// The revocations item keeps its last [`REVOCATIONS_KEPT`] entries under
/// contention: while twenty writers append at once (each append trims what
/// it saw past the bound, and a trim another beat does nothing) it stays
/// within the bound and two entries per writer, and ends with its count
/// exact and its newest entries there.
#[tokio::test]
async fn the_revocations_item_stays_bounded_under_concurrent_appends() {
    use authz_core::model::items::{Revokee, REVOCATIONS_KEPT};
    use authz_core::model::values::UserId;
    let (_table, store) = common::store().await;
    let writers = 20;
    let each = 15;
    let users: Vec<UserId> = (0..writers * each).map(|_| UserId::generate()).collect();
    // A reader samples the item while the writers run: the bound must
    // hold throughout, not only once the last append, alone, trimmed.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = tokio::spawn({
        let (store, done) = (store.clone(), done.clone());
        async move {
            let mut longest = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(Some(item)) = store.revocations(true).await {
                    longest = longest.max(item.recent.len());
                }
            }
            longest
        }
    });
    futures::future::join_all(users.chunks(each).map(|mine| {
        let store = store.clone();
        async move {
            for user in mine {
                store.record_revocations(&[Revokee::User(*user)]).await;
            }
        }
    }))
    .await;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let longest = sampler.await.unwrap();
    assert!(
        longest <= REVOCATIONS_KEPT + 2 * writers,
        "{longest} entries held while the writers ran"
    );
    let item = store.revocations(true).await.unwrap().unwrap();
    assert_eq!(item.seq, (writers * each) as u64, "every append counted");
    assert!(
        item.recent.len() <= REVOCATIONS_KEPT + writers,
        "{} entries kept",
        item.recent.len()
    );
    // One more, alone, trims it to the bound.
    store
        .record_revocations(&[Revokee::User(UserId::generate())])
        .await;
    let item = store.revocations(true).await.unwrap().unwrap();
    assert_eq!(item.recent.len(), REVOCATIONS_KEPT);
}

/// A window of a tenant's directory reads the persons only up to the
/// window's end and counts the rest with pages that send no items: the
/// window, the total, one read per 100 before it and one count after.
#[tokio::test]
async fn a_directory_window_reads_up_to_its_end_and_counts_the_rest() {
    use authz_core::model::items::{DirectoryUser, Stamp};
    use authz_core::model::values::DirectoryUserId;
    let (table, store) = store().await;
    let t = tenant(&store, "big-directory").await.tenant_id;
    let at = authz_core::clock::now();
    let mut people: Vec<DirectoryUser> = (0..250)
        .map(|i| DirectoryUser {
            id: DirectoryUserId::generate(),
            tenant_id: t,
            user_name: format!("p{i}@big.example"),
            external_id: None,
            given_name: None,
            family_name: None,
            display_name: None,
            emails: Vec::new(),
            active: None,
            user_id: None,
            held: false,
            held_roles: Vec::new(),
            held_until: None,
            given_roles: Vec::new(),
            stamp: Stamp::new(&at),
            updated_by: None,
        })
        .collect();
    table.seed(&people).await;
    people.sort_by_key(|p| p.id.to_string());
    let counter = testkit::RequestCounter::new();
    let counted = authz_core::Store::new(
        table.counted_client_for("provisioning", &counter),
        table.name.clone(),
    );
    let (window, total) = counted.directory_users_window(&t, 10, 5).await.unwrap();
    assert_eq!(total, 250);
    let ids: Vec<_> = window.iter().map(|p| p.id).collect();
    let expected: Vec<_> = people[10..15].iter().map(|p| p.id).collect();
    assert_eq!(ids, expected, "id order, from the eleventh");
    assert_eq!(counter.count("Query"), 2, "one page of items, one count");
    let (late, total) = store.directory_users_window(&t, 240, 100).await.unwrap();
    assert_eq!((late.len(), total), (10, 250));
    let (none, total) = store.directory_users_window(&t, 300, 100).await.unwrap();
    assert_eq!((none.len(), total), (0, 250));
}
