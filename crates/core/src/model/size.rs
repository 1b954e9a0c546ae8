//! DynamoDB's size rules, for the limits it enforces: 400 KB per item and
//! 4 MB per transaction (the sum of what its actions send). An attribute
//! counts its name's UTF-8 bytes plus its value: a string its UTF-8 bytes,
//! a number one byte per two significant digits plus one, a boolean or
//! null one byte, a list or map 3 bytes plus one byte and the size of each
//! element (a map's element with its name).

use aws_sdk_dynamodb::types::AttributeValue;

use crate::model::items::Item;

/// DynamoDB's largest item.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// DynamoDB's largest transaction payload.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// The size of a value as DynamoDB counts it.
pub fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        // A type this SDK does not know yet: count it as the largest number.
        _ => 21,
    }
}

fn number_size(n: &str) -> usize {
    let digits: String = n.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

/// The size of an item (or a key, or a set of named values).
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::clock::now;
    use crate::model::input::{
        IDENTITIES_PER_USER_MAX, ROLES_PER_HOLDER_MAX, ROLE_PERMISSIONS_MAX,
    };
    use crate::model::items::{Entity, LinkedIdentity, Stamp, TenantGrant, User};
    use crate::model::values::{
        Email, IdentityId, Issuer, Permission, Phone, PreferredUsername, RoleId, Subject,
        TenantGrantId, TenantId, Text, UserId, UserStatus, EMAIL_MAX, ISSUER_MAX, NAME_MAX,
        PERMISSION_MAX, SUBJECT_MAX, TEXT_MAX,
    };

    /// The most permissions a holder can store: every one of its roles full
    /// of distinct permissions of the longest length.
    fn largest_permissions() -> Vec<Permission> {
        let n = ROLES_PER_HOLDER_MAX * ROLE_PERMISSIONS_MAX;
        (0..n)
            .map(|i| {
                let tail = format!(":{i:05}");
                let head = "p".repeat(PERMISSION_MAX - tail.len());
                Permission::parse(&format!("{head}{tail}")).unwrap()
            })
            .collect()
    }

    fn largest_roles() -> Vec<RoleId> {
        (0..ROLES_PER_HOLDER_MAX)
            .map(|_| RoleId::generate())
            .collect()
    }

    /// The largest grant and user the validation rules allow stay under
    /// DynamoDB's 400 KB item limit, with room for what a write adds.
    #[test]
    fn the_largest_grant_and_user_fit_in_an_item() {
        let grant = TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: TenantId::generate(),
            user_id: UserId::generate(),
            roles: largest_roles(),
            effective_permissions: largest_permissions(),
            stamp: Stamp {
                version: u64::MAX,
                created_at: now(),
                updated_at: now(),
            },
            expires_at: Some(u64::MAX),
            updated_by: Some(UserId::generate().to_string()),
        };
        let widest = "\u{1D11E}".repeat(TEXT_MAX);
        let local = "e".repeat(EMAIL_MAX - "@example.com".len());
        let user = User {
            user_id: UserId::generate(),
            email: Email::parse(&format!("{local}@example.com")).unwrap(),
            phone: Some(Phone::parse("+123456789012345").unwrap()),
            preferred_username: Some(PreferredUsername::parse(&"u".repeat(NAME_MAX)).unwrap()),
            given_name: Some(Text::parse(&widest).unwrap()),
            family_name: Some(Text::parse(&widest).unwrap()),
            status: UserStatus::Suspended,
            roles: largest_roles(),
            effective_permissions: largest_permissions(),
            roles_expire_at: Some(u64::MAX),
            // The most identities, each of the longest issuer and subject.
            identities: (0..IDENTITIES_PER_USER_MAX)
                .map(|i| {
                    let issuer = format!("https://{}/{i:02}", "i".repeat(ISSUER_MAX - 12));
                    let issuer = Issuer::parse(&issuer).unwrap();
                    let subject = Subject::parse(&"\u{1D11E}".repeat(SUBJECT_MAX)).unwrap();
                    LinkedIdentity {
                        identity_id: IdentityId::of(&issuer, &subject),
                        issuer,
                        subject,
                        linked_at: now(),
                    }
                })
                .collect(),
            stamp: Stamp {
                version: u64::MAX,
                created_at: now(),
                updated_at: now(),
            },
            updated_by: Some(UserId::generate().to_string()),
        };
        let grant_size = item_size(&grant.to_item().unwrap());
        let user_size = item_size(&user.to_item().unwrap());
        for (what, size) in [("grant", grant_size), ("user", user_size)] {
            assert!(
                size < MAX_ITEM_BYTES * 3 / 4,
                "the largest {what} is {size} bytes; DynamoDB's limit is {MAX_ITEM_BYTES}"
            );
        }
        // And one holder's rewrite fits a transaction many times over.
        assert!(grant_size * 10 < MAX_TRANSACTION_BYTES);
    }

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        assert_eq!(value_size(&AttributeValue::S("héllo".into())), 6);
        assert_eq!(value_size(&AttributeValue::N("12345".into())), 4);
        assert_eq!(value_size(&AttributeValue::N("100".into())), 2);
        assert_eq!(value_size(&AttributeValue::Bool(true)), 1);
        let list = AttributeValue::L(vec![AttributeValue::S("ab".into()); 3]);
        assert_eq!(value_size(&list), 3 + 3 * 3);
        let item: Item = HashMap::from([
            ("PK".to_string(), AttributeValue::S("K1".into())),
            ("roles".to_string(), list),
        ]);
        assert_eq!(item_size(&item), 2 + 2 + 5 + 12);
    }
}
