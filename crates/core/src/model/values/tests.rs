//! Tests of the values: what each accepts, how it is normalized, and the
//! field and rule a rejection names.

use super::*;

fn reason<T: fmt::Debug>(r: Result<T, Invalid>) -> String {
    r.expect_err("value should be rejected").reason
}

#[test]
fn ulid_ids_are_canonical_and_reject_non_ulids() {
    let id = TenantId::parse("01j8z0e2z8d2a3j7a7y2h9gq9c").unwrap();
    assert_eq!(id.to_string(), "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C");
    for bad in [
        "",
        "not-a-ulid",
        "01J8Z0E2Z8D2A3J7A7Y2H9GQ9",
        "01J8Z0E2Z8D2A3J7A7Y2H9GQ9CX",
        "01J8Z0E2Z8D2A3J7A7Y2H9GQ9#",
        "81J8Z0E2Z8D2A3J7A7Y2H9GQ9C", // overflows 128 bits
        "01J8Z0E2Z8D2A3J7A7Y2H9GQ9U", // U is not Crockford
    ] {
        let err = TenantId::parse(bad).expect_err(bad);
        assert_eq!(err.field, "tenantId", "{bad}");
    }
    assert_eq!(UserId::parse("x").unwrap_err().field, "userId");
}

#[test]
fn tenant_names_are_lowercased_and_checked() {
    assert_eq!(TenantName::parse("Acme-EU").unwrap().as_str(), "acme-eu");
    assert_eq!(TenantName::parse("a").unwrap().as_str(), "a");
    assert_eq!(reason(TenantName::parse("")), "must not be empty");
    assert!(reason(TenantName::parse("ac#me")).contains("'#'"));
    assert!(reason(TenantName::parse("ac me")).contains("must not contain a space"));
    assert!(reason(TenantName::parse("ac\u{7}me")).contains("control"));
    assert!(reason(TenantName::parse("-acme")).contains("start with"));
    assert!(reason(TenantName::parse("acmé")).contains("only a-z"));
    assert!(TenantName::parse(&"a".repeat(64)).is_ok());
    assert!(reason(TenantName::parse(&"a".repeat(65))).contains("at most 64"));
    assert!(reason(TenantName::parse(&"a".repeat(10 * 1024))).contains("at most 64"));
}

#[test]
fn role_and_policy_names_are_not_rewritten() {
    assert!(RoleName::parse("Admin").is_err());
    assert_eq!(
        RoleName::parse("tenant.admin_2").unwrap().as_str(),
        "tenant.admin_2"
    );
    assert_eq!(PolicyName::parse("X").unwrap_err().field, "name");
    assert!(PolicyName::parse("ticket-tenant-enforce").is_ok());
    assert!(NamePrefix::parse("").is_ok());
    assert!(NamePrefix::parse("ticket-").is_ok());
    assert!(NamePrefix::parse("tick#").is_err());
    assert_eq!(TenantNamePrefix::parse("AC").unwrap().as_str(), "ac");
    assert!(TenantNamePrefix::parse("a c").is_err());
    assert_eq!(EmailPrefix::parse(" Jane.D ").unwrap().as_str(), "jane.d");
    assert_eq!(EmailPrefix::parse("a#b").unwrap_err().field, "emailPrefix");
}

#[test]
fn emails_are_trimmed_lowercased_and_not_rewritten() {
    let e = Email::parse("  First.Last+Tag@Example.COM ").unwrap();
    assert_eq!(e.as_str(), "first.last+tag@example.com");
    assert_eq!(
        reason(Email::parse("no-at.example.com")),
        "must contain '@'"
    );
    assert!(Email::parse("@example.com").is_err());
    assert!(Email::parse("a@").is_err());
    assert!(Email::parse("a@b@c").is_err());
    assert!(Email::parse("a b@c.com").is_err());
    assert!(Email::parse("a#b@c.com").is_err());
    assert!(Email::parse("a@c..com").is_err());
    assert!(Email::parse("").is_err());
    let long = format!("{}@example.com", "a".repeat(250));
    assert!(reason(Email::parse(&long)).contains("at most 254"));
}

#[test]
fn phones_are_e164() {
    assert_eq!(
        Phone::parse(" +14155550100 ").unwrap().as_str(),
        "+14155550100"
    );
    for bad in [
        "14155550100",
        "+0123",
        "+1",
        "+1234567890123456",
        "+1 415 555",
        "+1-415",
        "",
    ] {
        assert_eq!(Phone::parse(bad).unwrap_err().field, "phone", "{bad:?}");
    }
}

#[test]
fn preferred_usernames_are_normalized() {
    assert_eq!(
        PreferredUsername::parse(" Jane.Doe ").unwrap().as_str(),
        "jane.doe"
    );
    assert!(PreferredUsername::parse("jane doe").is_err());
    assert!(PreferredUsername::parse(&"j".repeat(65)).is_err());
}

#[test]
fn permissions_follow_the_grammar() {
    for ok in [
        "*",
        "ticket",
        "ticket:read",
        "ticket:*",
        "a:b:c:d",
        "a:b:c:*",
        "x.y-z_1:r",
    ] {
        assert!(Permission::parse(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "*:read",
        "ticket:",
        ":read",
        "a:b:c:d:e",
        "Ticket:read",
        "ticket:re*",
        "ti#cket",
        "ticket: read",
        "**",
    ] {
        assert_eq!(
            Permission::parse(bad).unwrap_err().field,
            "permissions",
            "{bad:?}"
        );
    }
    assert!(Permission::parse(&format!("a:{}", "b".repeat(127))).is_err());
}

#[test]
fn permission_matching() {
    let p = |s: &str| Permission::parse(s).unwrap();
    assert!(p("*").covers("ticket:read"));
    assert!(p("ticket:*").covers("ticket:read"));
    assert!(p("ticket:*").covers("ticket:comment:write"));
    assert!(!p("ticket:*").covers("ticket"));
    assert!(!p("ticket:*").covers("tickets:read"));
    assert!(p("ticket:read").covers("ticket:read"));
    assert!(!p("ticket:read").covers("ticket:readall"));
    assert!(!p("ticket:read").covers("ticket:*"));
    assert!(any_covers(&[p("a:b"), p("c:*")], "c:d"));
    assert!(!any_covers(&[], "c:d"));
}

#[test]
fn policy_ids_are_opaque_but_key_safe() {
    assert!(PolicyId::parse("p-abc123").is_ok());
    assert!(PolicyId::parse("SPdG_8gZ-1").is_ok());
    assert!(PolicyId::parse("p#1").is_err());
    assert!(PolicyId::parse("p.1").is_err());
    assert!(PolicyId::parse(&"p".repeat(201)).is_err());
    assert!(PolicyId::parse("").is_err());
}

#[test]
fn lists_name_the_bad_element() {
    let raw = vec!["a:b".to_string(), "bad perm".to_string()];
    let err = parse_list("permissions", &raw, 100, Permission::parse_field).unwrap_err();
    assert_eq!(err.field, "permissions[1]");
    let dup = vec!["a:b".to_string(), "a:b".to_string()];
    let err = parse_list("permissions", &dup, 100, Permission::parse_field).unwrap_err();
    assert_eq!(err.reason, "is a duplicate");
    let many: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
    assert!(parse_list("permissions", &many, 2, Permission::parse_field).is_err());
}

#[test]
fn serde_revalidates() {
    let ok: Email = serde_json::from_str("\"A@B.C\"").unwrap();
    assert_eq!(ok.as_str(), "a@b.c");
    assert!(serde_json::from_str::<Email>("\"nope\"").is_err());
    assert_eq!(
        serde_json::to_string(&RoleScope::Global).unwrap(),
        "\"global\""
    );
}
