//! Tests of the items: each stored as the table's layout says, read
//! back, and decoded the same from a stream image.

use super::*;
use crate::clock::now;
use crate::model::keys::Holder;
use crate::model::values::{
    Email, IdentityId, InvitationId, Issuer, Phone, PolicyId, PolicyName, PreferredUsername,
    RoleId, RoleScope, Subject, TenantGrantId, TenantId, TenantName, TenantStatus, Text, UserId,
    UserStatus,
};

fn role(permissions: &[&str]) -> Role {
    crate::testing::role_item(RoleScope::Tenant, permissions)
}

#[test]
fn tenant_item_matches_the_layouts_example() {
    let t = Tenant {
        tenant_id: TenantId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").unwrap(),
        name: TenantName::parse("acme").unwrap(),
        status: TenantStatus::Active,
        stamp: Stamp::new("2025-09-10T00:00:00Z"),
        updated_by: None,
    };
    let item = t.to_item().unwrap();
    let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
    assert_eq!(
        s("PK").as_deref(),
        Some("TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C")
    );
    assert_eq!(
        s("SK").as_deref(),
        Some("TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C")
    );
    assert_eq!(s("GSI1PK").as_deref(), Some("TENANT_NAME#acme"));
    assert_eq!(s("GSI1SK").as_deref(), Some("TENANT_NAME#acme"));
    assert_eq!(s("Type").as_deref(), Some("Tenant"));
    assert_eq!(s("tenantId").as_deref(), Some("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C"));
    assert_eq!(s("name").as_deref(), Some("acme"));
    assert_eq!(
        item.get("version")
            .and_then(|v| v.as_n().ok())
            .map(String::as_str),
        Some("1")
    );
    assert!(
        !item.contains_key("updatedBy"),
        "None fields are left out, not NULL"
    );
    assert_eq!(s("status").as_deref(), Some("active"));
    assert_eq!(Tenant::from_item(item.clone()).unwrap(), t);
    // An item written before tenants had a status reads as active.
    let mut old = item;
    old.remove("status");
    assert_eq!(Tenant::from_item(old).unwrap(), t);
}

#[test]
fn grant_roles_are_a_list_of_strings() {
    let g = TenantGrant {
        tenant_grant_id: TenantGrantId::generate(),
        tenant_id: TenantId::generate(),
        user_id: UserId::generate(),
        roles: vec![RoleId::generate(), RoleId::generate()],
        effective_permissions: vec![],
        expires_at: Some(1_900_000_000),
        stamp: Stamp::new(&now()),
        updated_by: None,
    };
    let item = g.to_item().unwrap();
    assert_eq!(item["expiresAt"].as_n().unwrap(), "1900000000");
    let roles = item["roles"].as_l().unwrap();
    assert_eq!(roles.len(), 2);
    assert!(roles.iter().all(|r| r.as_s().is_ok()));
    assert_eq!(TenantGrant::from_item(item).unwrap(), g);
}

#[test]
fn from_item_checks_the_type() {
    let t = role(&[]).to_item().unwrap();
    let err = Tenant::from_item(t).unwrap_err();
    assert!(matches!(err, Error::Internal { .. }), "{err:?}");
}

#[test]
fn stream_images_decode_into_the_same_structs() {
    let r = role(&["ticket:read"]);
    let image: serde_dynamo::Item = serde_dynamo::to_item(&r).unwrap();
    let mut image: HashMap<String, serde_dynamo::AttributeValue> = image.into();
    image.insert(
        "Type".into(),
        serde_dynamo::AttributeValue::S("Role".into()),
    );
    match AnyItem::from_image(image.into()).unwrap() {
        AnyItem::Role(decoded) => assert_eq!(decoded, r),
        other => panic!("decoded as {other:?}"),
    }
    let mut unknown: HashMap<String, serde_dynamo::AttributeValue> = HashMap::new();
    unknown.insert(
        "Type".into(),
        serde_dynamo::AttributeValue::S("Invoice".into()),
    );
    assert_eq!(
        AnyItem::from_image(unknown.into()).unwrap(),
        AnyItem::Other(Some("Invoice".into()))
    );
}

#[test]
fn union_is_sorted_and_deduplicated() {
    let a = role(&["ticket:read", "ticket:write"]);
    let b = role(&["ticket:read", "admin:*"]);
    let perms: Vec<String> = union_permissions([&a, &b])
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(perms, ["admin:*", "ticket:read", "ticket:write"]);
}

/// A User with every optional field set, and its attributes as the
/// code writes them, spelled out.
fn full_user() -> (User, HashMap<String, AttributeValue>) {
    let user = User {
        user_id: UserId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9D").unwrap(),
        email: Email::parse("ann@example.com").unwrap(),
        phone: Some(Phone::parse("+15555550100").unwrap()),
        preferred_username: Some(PreferredUsername::parse("ann").unwrap()),
        given_name: Some(Text::parse("Ann").unwrap()),
        family_name: Some(Text::parse("Lee").unwrap()),
        status: UserStatus::Active,
        roles: vec![RoleId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9E").unwrap()],
        effective_permissions: vec![Permission::parse("ticket:read").unwrap()],
        roles_expire_at: Some(1_900_000_000),
        identities: vec![LinkedIdentity {
            identity_id: IdentityId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9F").unwrap(),
            issuer: Issuer::parse("https://issuer.example.com").unwrap(),
            subject: Subject::parse("auth0|5f7c").unwrap(),
            linked_at: "2025-09-10T00:00:00Z".into(),
        }],
        stamp: Stamp {
            version: 7,
            created_at: "2025-09-10T00:00:00Z".into(),
            updated_at: "2025-09-11T12:30:00Z".into(),
        },
        updated_by: Some("ops".into()),
    };
    let s = |v: &str| AttributeValue::S(v.into());
    let n = |v: &str| AttributeValue::N(v.into());
    let attributes = HashMap::from([
        ("userId".to_string(), s("01J8Z0E2Z8D2A3J7A7Y2H9GQ9D")),
        ("email".into(), s("ann@example.com")),
        ("phone".into(), s("+15555550100")),
        ("preferredUsername".into(), s("ann")),
        ("givenName".into(), s("Ann")),
        ("familyName".into(), s("Lee")),
        ("status".into(), s("active")),
        (
            "roles".into(),
            AttributeValue::L(vec![s("01J8Z0E2Z8D2A3J7A7Y2H9GQ9E")]),
        ),
        (
            "effectivePermissions".into(),
            AttributeValue::L(vec![s("ticket:read")]),
        ),
        ("rolesExpireAt".into(), n("1900000000")),
        (
            "identities".into(),
            AttributeValue::L(vec![AttributeValue::M(HashMap::from([
                ("identityId".to_string(), s("01J8Z0E2Z8D2A3J7A7Y2H9GQ9F")),
                ("issuer".into(), s("https://issuer.example.com")),
                ("subject".into(), s("auth0|5f7c")),
                ("linkedAt".into(), s("2025-09-10T00:00:00Z")),
            ]))]),
        ),
        ("version".into(), n("7")),
        ("createdAt".into(), s("2025-09-10T00:00:00Z")),
        ("updatedAt".into(), s("2025-09-11T12:30:00Z")),
        ("updatedBy".into(), s("ops")),
    ]);
    (user, attributes)
}

#[test]
fn stored_attributes_are_spelled_out() {
    let (user, attributes) = full_user();
    let written: Item = serde_dynamo::to_item(&user).unwrap();
    assert_eq!(written, attributes);
    // Without its optional fields: those attributes are left out.
    let mut bare = user.clone();
    (bare.phone, bare.preferred_username) = (None, None);
    (bare.given_name, bare.family_name) = (None, None);
    (bare.roles_expire_at, bare.updated_by) = (None, None);
    let mut bare_attributes = attributes.clone();
    for name in [
        "phone",
        "preferredUsername",
        "givenName",
        "familyName",
        "rolesExpireAt",
        "updatedBy",
    ] {
        bare_attributes.remove(name);
    }
    let written: Item = serde_dynamo::to_item(&bare).unwrap();
    assert_eq!(written, bare_attributes);
}

#[test]
fn stored_attributes_read_back() {
    let (user, attributes) = full_user();
    // As read from the table, with its key attributes and Type.
    let mut stored = attributes.clone();
    stored.extend(
        user.to_item()
            .unwrap()
            .into_iter()
            .filter(|(k, _)| !attributes.contains_key(k)),
    );
    assert_eq!(User::from_item(stored.clone()).unwrap(), user);
    // And as a stream image.
    let image: serde_dynamo::Item = stored.clone().into();
    assert_eq!(
        AnyItem::from_image(image).unwrap(),
        AnyItem::User(user.clone())
    );
    // The largest version there is, past an i64.
    stored.insert("version".into(), AttributeValue::N(u64::MAX.to_string()));
    assert_eq!(User::from_item(stored.clone()).unwrap().version(), u64::MAX);
    // A version that is not a whole number is refused.
    stored.insert("version".into(), AttributeValue::N("1.5".into()));
    assert!(User::from_item(stored.clone()).is_err());
    stored.insert("version".into(), AttributeValue::S("1".into()));
    assert!(User::from_item(stored.clone()).is_err());
    stored.remove("version");
    assert!(User::from_item(stored).is_err());
}

/// Every stamped type stores its stamp as three top-level attributes
/// (and JSON fields, which the history's diff reads), never as a map,
/// and reads it back.
#[test]
fn every_stamped_type_stores_its_stamp_flat() {
    fn check<E: Entity + PartialEq + std::fmt::Debug>(entity: &E, stamp: &Stamp) {
        let item = entity.to_item().unwrap();
        let what = E::TYPE.as_str();
        assert!(!item.contains_key("stamp"), "{what}: {item:?}");
        assert_eq!(
            item.get("version").and_then(|v| v.as_n().ok()),
            Some(&stamp.version.to_string()),
            "{what}"
        );
        assert_eq!(
            item.get("createdAt").and_then(|v| v.as_s().ok()),
            Some(&stamp.created_at),
            "{what}"
        );
        assert_eq!(
            item.get("updatedAt").and_then(|v| v.as_s().ok()),
            Some(&stamp.updated_at),
            "{what}"
        );
        assert_eq!(&E::from_item(item).unwrap(), entity, "{what}");
        let json = serde_json::to_value(entity).unwrap();
        assert!(json.get("stamp").is_none(), "{what}: {json}");
        assert_eq!(json["version"], stamp.version, "{what}");
        assert_eq!(json["createdAt"], stamp.created_at.as_str(), "{what}");
        assert_eq!(json["updatedAt"], stamp.updated_at.as_str(), "{what}");
    }
    let created = "2025-09-10T00:00:00Z";
    let stamp = Stamp::new(created).next("2025-09-11T12:30:00Z");
    assert_eq!(
        stamp,
        Stamp {
            version: 2,
            created_at: created.into(),
            updated_at: "2025-09-11T12:30:00Z".into(),
        }
    );
    let fresh = Stamp::new(created);
    let (user, _) = full_user();
    let tenant = Tenant {
        tenant_id: TenantId::generate(),
        name: TenantName::parse("acme").unwrap(),
        status: TenantStatus::Active,
        stamp: stamp.clone(),
        updated_by: Some("ops".into()),
    };
    let role = Role {
        stamp: stamp.clone(),
        ..role(&["ticket:read"])
    };
    let grant = TenantGrant {
        tenant_grant_id: TenantGrantId::generate(),
        tenant_id: tenant.tenant_id,
        user_id: user.user_id,
        roles: vec![role.role_id],
        effective_permissions: role.permissions.clone(),
        expires_at: Some(1_900_000_000),
        stamp: stamp.clone(),
        updated_by: None,
    };
    let policy = Policy {
        policy_id: PolicyId::parse("p-abc123").unwrap(),
        name: PolicyName::parse("p").unwrap(),
        description: None,
        statement: Some("permit(principal, action, resource);".into()),
        tenant_id: Some(tenant.tenant_id),
        platform: false,
        stamp: stamp.clone(),
        updated_by: None,
    };
    let invitation = Invitation {
        invitation_id: InvitationId::generate(),
        tenant_id: tenant.tenant_id,
        email: user.email.clone(),
        roles: vec![role.role_id],
        invited_by: None,
        inviter: Some(user.user_id),
        expires_at: 1_900_000_000,
        stamp: stamp.clone(),
    };
    let phone = user.phone.clone().unwrap();
    let username = user.preferred_username.clone().unwrap();
    let link = RoleMember::new(role.role_id, grant.holder(), None, created);
    check(&tenant, &stamp);
    check(
        &TenantNameGuard::new(
            NameOfTenant {
                name: tenant.name.clone(),
                tenant_id: tenant.tenant_id,
            },
            created,
        ),
        &fresh,
    );
    check(&user, &user.stamp);
    check(&UserLookup::of(&user), &user.stamp);
    check(
        &UserEmailGuard::new(
            EmailOfUser {
                email: user.email.clone(),
                user_id: user.user_id,
            },
            created,
        ),
        &fresh,
    );
    check(&EmailAddress::primary_of(&user, created), &fresh);
    check(
        &UserPhoneGuard::new(
            PhoneOfUser {
                phone: phone.clone(),
                user_id: user.user_id,
            },
            created,
        ),
        &fresh,
    );
    let guard = UserPreferredUsernameGuard::new(
        UsernameOfUser {
            preferred_username: username.clone(),
            user_id: user.user_id,
        },
        created,
    );
    check(&guard, &fresh);
    check(&role, &stamp);
    check(&RoleRef::of(&role, created), &fresh);
    check(&link, &fresh);
    check(&grant, &stamp);
    check(&policy, &stamp);
    check(&PolicyRef::of(&policy, created), &fresh);
    check(&invitation, &stamp);
    check(&InvitationRef::of(&invitation), &fresh);
}

#[test]
fn role_member_holder_roundtrips() {
    let user_id = UserId::generate();
    let tenant_id = TenantId::generate();
    let m = RoleMember::new(
        RoleId::generate(),
        Holder::Grant { tenant_id, user_id },
        Some(TenantGrantId::generate()),
        &now(),
    );
    assert_eq!(m.holder(), Holder::Grant { tenant_id, user_id });
    let item = m.to_item().unwrap();
    assert!(item["SK"].as_s().unwrap().starts_with("MEMBER#TENANT#"));
    assert_eq!(RoleMember::from_item(item).unwrap(), m);
}
