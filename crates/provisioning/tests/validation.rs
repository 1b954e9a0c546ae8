//! Bad values are rejected, with the field and the rule named, before any
//! request reaches DynamoDB: a client that counts its requests sends none and
//! the table stays empty.

use authz_core::{Error, Store};
use provisioning::bodies::{CreatePolicy, CreateRole, CreateTenant, CreateUser};
use testkit::{RequestCounter, TestTable};

/// Validates `request` and, only if it passes, writes it: the path every
/// caller takes. Returns the error and checks nothing was sent.
macro_rules! rejected {
    ($store:expr, $counter:expr, $request:expr, $write:ident) => {
        rejected!($store, $counter, $request, $write, None)
    };
    ($store:expr, $counter:expr, $request:expr, $write:ident, $by:expr) => {{
        let outcome = match $request.validate() {
            Ok(valid) => $store.$write(&valid, $by).await.map(|_| ()),
            Err(invalid) => Err(Error::from(invalid)),
        };
        assert_eq!(
            $counter.total(),
            0,
            "no request may be sent for {:?}",
            $request
        );
        match outcome {
            Err(Error::Invalid { field, reason }) => (field, reason),
            other => panic!("expected Invalid for {:?}, got {other:?}", $request),
        }
    }};
}

#[tokio::test]
async fn bad_values_never_reach_dynamodb() {
    let table = TestTable::create().await;
    let counter = RequestCounter::new();
    let store = Store::new(
        table.counted_client_for("provisioning", &counter),
        table.name.clone(),
    );

    let ten_kb = "a".repeat(10 * 1024);
    let sixty_five = "a".repeat(65);
    for (name, rule) in [
        ("ac#me", "'#'"),
        ("ac\u{0}me", "control"),
        ("ac\nme", "control"),
        ("ac me", "a space"),
        ("ac\u{a0}me", "whitespace (U+00A0)"),
        ("", "must not be empty"),
        (sixty_five.as_str(), "at most 64"),
        (ten_kb.as_str(), "at most 64"),
    ] {
        let (field, reason) = rejected!(
            store,
            counter,
            CreateTenant { name: name.into() },
            create_tenant
        );
        assert_eq!(field, "name");
        assert!(reason.contains(rule), "{name:?}: {reason}");
    }

    for (request, field) in [
        (
            CreateUser {
                email: "no-at-sign.example.com".into(),
                ..Default::default()
            },
            "email",
        ),
        (
            CreateUser {
                email: "".into(),
                ..Default::default()
            },
            "email",
        ),
        (
            CreateUser {
                email: "a#b@example.com".into(),
                ..Default::default()
            },
            "email",
        ),
        (
            CreateUser {
                email: format!("{ten_kb}@example.com"),
                ..Default::default()
            },
            "email",
        ),
        (
            CreateUser {
                email: "a@example.com".into(),
                phone: Some("415-555-0100".into()),
                ..Default::default()
            },
            "phone",
        ),
        (
            CreateUser {
                email: "a@example.com".into(),
                phone: Some("".into()),
                ..Default::default()
            },
            "phone",
        ),
        (
            CreateUser {
                email: "a@example.com".into(),
                preferred_username: Some(sixty_five.clone()),
                ..Default::default()
            },
            "preferredUsername",
        ),
        (
            CreateUser {
                email: "a@example.com".into(),
                given_name: Some("Bell\u{7}".into()),
                ..Default::default()
            },
            "givenName",
        ),
        (
            CreateUser {
                email: "a@example.com".into(),
                roles: vec!["not-a-ulid".into()],
                ..Default::default()
            },
            "roles[0]",
        ),
    ] {
        let (got, _) = rejected!(
            store,
            counter,
            request,
            create_user,
            &authz_core::Caller::OPERATOR
        );
        assert_eq!(got, field);
    }

    for (request, field) in [
        (
            CreateRole {
                name: "Admin".into(),
                scope: "tenant".into(),
                permissions: vec![],
                description: None,
            },
            "name",
        ),
        (
            CreateRole {
                name: "admin".into(),
                scope: "team".into(),
                permissions: vec![],
                description: None,
            },
            "scope",
        ),
        (
            CreateRole {
                name: "admin".into(),
                scope: "tenant".into(),
                permissions: vec!["ticket:read".into(), "*:read".into()],
                description: None,
            },
            "permissions[1]",
        ),
        (
            CreateRole {
                name: "admin".into(),
                scope: "tenant".into(),
                permissions: (0..101).map(|i| format!("p{i}")).collect(),
                description: None,
            },
            "permissions",
        ),
    ] {
        let (got, _) = rejected!(
            store,
            counter,
            request,
            create_role,
            &authz_core::Caller::OPERATOR
        );
        assert_eq!(got, field);
    }

    for (request, field) in [
        (
            CreatePolicy {
                name: "p#1".into(),
                policy_id: None,
                description: None,
                statement: None,
            },
            "name",
        ),
        (
            CreatePolicy {
                name: "p1".into(),
                policy_id: Some("has space".into()),
                description: None,
                statement: None,
            },
            "policyId",
        ),
        (
            CreatePolicy {
                name: "p1".into(),
                policy_id: Some(ten_kb.clone()),
                description: None,
                statement: None,
            },
            "policyId",
        ),
    ] {
        let (got, _) = rejected!(store, counter, request, create_policy);
        assert_eq!(got, field);
    }

    assert!(table.scan_all().await.is_empty(), "the table is untouched");
}

#[tokio::test]
async fn a_valid_create_is_one_transaction() {
    let table = TestTable::create().await;
    let counter = RequestCounter::new();
    let store = Store::new(
        table.counted_client_for("provisioning", &counter),
        table.name.clone(),
    );
    let request = CreateUser {
        email: "a@example.com".into(),
        phone: Some("+442071838750".into()),
        preferred_username: Some("a".into()),
        ..Default::default()
    };
    store
        .create_user(&request.validate().unwrap(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    assert_eq!(
        counter.counts().into_iter().collect::<Vec<_>>(),
        vec![("TransactWriteItems".to_string(), 1)]
    );
    assert_eq!(
        table.keys().await.len(),
        7,
        "user, three guards, its list entry, its email address and the record of its creation"
    );
}
