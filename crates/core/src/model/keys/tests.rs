//! Tests of the keys: each built as the table's layout says, and parsed back.

use super::*;

// Values from the layout's representative examples (docs/table.md).
const TENANT_ID: &str = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C";
const USER_ID: &str = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
const GRANT_ID: &str = "01J8Z3Q3TQ6T0C9J2W0G7N2B6V";
const ROLE_ID: &str = "01J8X2W3Y4Z5A6B7C8D9E0F1G2";

fn tid() -> TenantId {
    TenantId::parse(TENANT_ID).unwrap()
}
fn uid() -> UserId {
    UserId::parse(USER_ID).unwrap()
}
fn rid() -> RoleId {
    RoleId::parse(ROLE_ID).unwrap()
}

fn roundtrip(key: &PrimaryKey, expected: ParsedKey) {
    assert_eq!(parse(&key.pk, &key.sk).unwrap(), expected, "{key}");
}

#[test]
fn tenant_keys_match_the_layout() {
    let k = tenant(&tid());
    assert_eq!(k.pk, "TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    assert_eq!(k.sk, "TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    let name = TenantName::parse("acme").unwrap();
    let g = tenant_by_name(&name);
    assert_eq!(
        (g.pk.as_str(), g.sk.as_str()),
        ("TENANT_NAME#acme", "TENANT_NAME#acme")
    );
    let guard = tenant_name_guard(&name);
    assert_eq!(guard.pk, "TENANT_NAME#acme");
    assert_eq!(guard.sk, "TENANT_NAME#acme");
    let l = tenant_list_entry(&name);
    assert_eq!((l.pk.as_str(), l.sk.as_str()), ("LIST#TENANT", "acme"));
    roundtrip(&k, ParsedKey::Tenant(tid()));
    roundtrip(&guard, ParsedKey::TenantNameGuard(name));
}

#[test]
fn user_and_guard_keys_match_the_layout() {
    let k = user(&uid());
    assert_eq!(k.pk, "USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM");
    assert_eq!(k.sk, k.pk);
    roundtrip(&k, ParsedKey::User(uid()));

    let email = Email::parse("Jane@Example.com").unwrap();
    let e = user_email_guard(&email);
    assert_eq!(
        (e.pk.as_str(), e.sk.as_str()),
        ("USER_EMAIL#jane@example.com", "USER_EMAIL#jane@example.com")
    );
    roundtrip(&e, ParsedKey::UserEmailGuard(email.clone()));

    let phone = Phone::parse("+14155550100").unwrap();
    let p = user_phone_guard(&phone);
    assert_eq!(p.pk, "USER_PHONE#+14155550100");
    assert_eq!(p.sk, p.pk);
    roundtrip(&p, ParsedKey::UserPhoneGuard(phone));

    let name = PreferredUsername::parse("jane").unwrap();
    let u = user_preferred_username_guard(&name);
    assert_eq!(u.pk, "USER_PREFERREDUSERNAME#jane");
    assert_eq!(u.sk, u.pk);
    roundtrip(&u, ParsedKey::UserPreferredUsernameGuard(name));

    let email_id = EmailId::parse(GRANT_ID).unwrap();
    let a = email_address(&uid(), &email_id);
    assert_eq!(
        (a.pk.as_str(), a.sk.as_str()),
        (
            "USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM",
            "EMAIL#01J8Z3Q3TQ6T0C9J2W0G7N2B6V"
        )
    );
    assert!(a.sk.starts_with(email_addresses_prefix()));
    roundtrip(&a, ParsedKey::EmailAddress(uid(), email_id));

    let l = user_list_entry(UserStatus::Suspended, &email);
    assert_eq!(
        (l.pk.as_str(), l.sk.as_str()),
        ("LIST#USER#suspended", "jane@example.com")
    );
}

#[test]
fn role_keys_match_the_layout() {
    let name = RoleName::parse("admin").unwrap();
    let k = role(RoleScope::Tenant, &name);
    assert_eq!(
        (k.pk.as_str(), k.sk.as_str()),
        ("ROLE_SCOPE#tenant", "ROLE_NAME#admin")
    );
    roundtrip(&k, ParsedKey::Role(RoleScope::Tenant, name));
    let g = role_by_id(&rid());
    assert_eq!(g.pk, "ROLE#01J8X2W3Y4Z5A6B7C8D9E0F1G2");
    assert_eq!(g.sk, g.pk);
    let r = role_ref(&rid());
    assert_eq!(r.pk, "ROLE#01J8X2W3Y4Z5A6B7C8D9E0F1G2");
    assert_eq!(r.sk, r.pk);
    roundtrip(&r, ParsedKey::RoleRef(rid()));
    assert_eq!(role_scope_partition(RoleScope::Global), "ROLE_SCOPE#global");
}

#[test]
fn role_member_links_parse_back_to_the_holder() {
    let grant = Holder::Grant {
        tenant_id: tid(),
        user_id: uid(),
    };
    let k = role_member(&rid(), &grant);
    assert_eq!(k.pk, "ROLE#01J8X2W3Y4Z5A6B7C8D9E0F1G2");
    assert_eq!(
        k.sk,
        "MEMBER#TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C#USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM"
    );
    roundtrip(&k, ParsedKey::RoleMember(rid(), grant));
    let global = Holder::Global { user_id: uid() };
    let k = role_member(&rid(), &global);
    assert_eq!(k.sk, "MEMBER#GLOBAL#USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM");
    assert!(k.sk.starts_with(role_members_prefix()));
    roundtrip(&k, ParsedKey::RoleMember(rid(), global));
}

#[test]
fn tenant_grant_keys_match_the_layout() {
    let k = tenant_grant(&tid(), &uid());
    assert_eq!(k.pk, "TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    assert_eq!(k.sk, "USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM");
    assert!(k.sk.starts_with(tenant_members_prefix()));
    roundtrip(&k, ParsedKey::TenantGrant(tid(), uid()));
    let g1 = tenant_grant_by_user(&uid(), &tid());
    assert_eq!(g1.pk, "USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM");
    assert_eq!(g1.sk, "TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    let g2 = tenant_grant_by_id(&TenantGrantId::parse(GRANT_ID).unwrap());
    assert_eq!(g2.pk, "TENANT_GRANT#01J8Z3Q3TQ6T0C9J2W0G7N2B6V");
    assert_eq!(g2.sk, g2.pk);
}

#[test]
fn invitation_keys_parse_back() {
    let email = Email::parse("Jane@Example.com").unwrap();
    let k = invitation(&tid(), &email);
    assert_eq!(k.pk, "TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    assert_eq!(k.sk, "INVITATION#jane@example.com");
    assert!(k.sk.starts_with(tenant_invitations_prefix()));
    roundtrip(&k, ParsedKey::Invitation(tid(), email.clone()));
    let g = invitation_by_invitee(&email, &tid());
    assert_eq!(g.pk, "INVITEE#jane@example.com");
    let id = InvitationId::parse(GRANT_ID).unwrap();
    let r = invitation_ref(&id);
    assert_eq!(r.pk, "INVITATION#01J8Z3Q3TQ6T0C9J2W0G7N2B6V");
    roundtrip(&r, ParsedKey::InvitationRef(id));
}

#[test]
fn policy_keys_match_the_layout() {
    let name = PolicyName::parse("ticket-tenant-enforce").unwrap();
    let k = policy(&name);
    assert_eq!(
        (k.pk.as_str(), k.sk.as_str()),
        ("GLOBAL", "POLICY_NAME#ticket-tenant-enforce")
    );
    roundtrip(&k, ParsedKey::Policy(name));
    roundtrip(&policy_counts(), ParsedKey::PolicyCounts);
    roundtrip(&revocations(), ParsedKey::Revocations);
    assert_eq!(policy_counts().sk, "POLICY_COUNTS");
    assert!(
        !policy_counts().sk.starts_with(POLICY_NAME),
        "listed with the policies"
    );
    // A scan reads them before the policies (`integrity::policy_counts`).
    assert!(policy_counts().sk.as_str() < POLICY_NAME);
    let id = PolicyId::parse("p-abc123").unwrap();
    let g = policy_by_id(&id);
    assert_eq!(
        (g.pk.as_str(), g.sk.as_str()),
        ("POLICY#p-abc123", "POLICY#p-abc123")
    );
    let r = policy_ref(&id);
    assert_eq!(
        (r.pk.as_str(), r.sk.as_str()),
        (g.pk.as_str(), g.sk.as_str())
    );
    roundtrip(&r, ParsedKey::PolicyRef(id));
    let prefix = NamePrefix::parse("ticket-").unwrap();
    assert_eq!(policy_name_prefix(&prefix), "POLICY_NAME#ticket-");
}

#[test]
fn foreign_or_malformed_keys_are_rejected() {
    for (pk, sk) in [
        ("TENANT#nope", "TENANT#nope"),
        ("TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", "OTHER#x"),
        (
            "USER#01J8YZZQ3V8PZKQ0ZKX4C2M7FM",
            "USER#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C",
        ),
        ("ROLE_SCOPE#team", "ROLE_NAME#admin"),
        ("ROLE_SCOPE#tenant", "admin"),
        ("ROLE#01J8X2W3Y4Z5A6B7C8D9E0F1G2", "MEMBER#TENANT#x"),
        ("GLOBAL", "POLICY#x"),
        ("POLICY#p-1", "POLICY#p-2"),
        ("POLICY#has space", "POLICY#has space"),
        ("ORDER#1", "ORDER#1"),
        ("USER_EMAIL#no-at", "USER_EMAIL#no-at"),
    ] {
        assert!(parse(pk, sk).is_err(), "({pk}, {sk})");
    }
}
