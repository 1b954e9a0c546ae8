//! Paged lists: the page request (`limit`, `cursor`), the page returned, and
//! opaque cursors that encode a Query's `LastEvaluatedKey`.
//!
//! A cursor is only accepted by the list it came from: its key attributes must
//! be exactly those of the index being read, its partition value must be the
//! partition being read, and its sort value must carry the list's prefix.
//! Anything else is `Invalid { field: "cursor" }`, never a read outside the
//! list.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::model::keys::{attr, Index};
use crate::model::values::Invalid;

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: i32 = 50;
pub const MAX_LIMIT: i32 = 100;
/// Longest cursor accepted (keys are at most a few hundred bytes).
pub const CURSOR_MAX: usize = 4096;
/// Longest key value a cursor may carry: DynamoDB's sort key limit.
const MAX_KEY_VALUE_BYTES: usize = 1024;

/// What page of a list to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: i32,
    pub cursor: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

impl PageRequest {
    /// From query-string values: `limit` 1-100 (default 50), `cursor` opaque.
    pub fn parse(limit: Option<&str>, cursor: Option<&str>) -> Result<Self, Invalid> {
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(raw) => match raw.parse::<i32>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(Invalid::new(
                        "limit",
                        format!("must be a whole number from 1 to {MAX_LIMIT}"),
                    ))
                }
            },
        };
        let cursor = match cursor {
            None | Some("") => None,
            Some(c) => Some(c.to_string()),
        };
        Ok(Self { limit, cursor })
    }

    pub fn with_limit(limit: i32) -> Self {
        Self {
            limit,
            cursor: None,
        }
    }

    pub fn next(&self, cursor: Option<String>) -> Option<Self> {
        cursor.map(|c| Self {
            limit: self.limit,
            cursor: Some(c),
        })
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Absent on the last page.
    pub next_cursor: Option<String>,
}

/// Which list a cursor belongs to.
#[derive(Debug, Clone)]
pub(crate) struct ListScope<'a> {
    pub index: Option<Index>,
    pub partition: &'a str,
    pub sort_prefix: Option<&'a str>,
}

impl ListScope<'_> {
    fn key_attrs(&self) -> Vec<&'static str> {
        let mut attrs = vec![attr::PK, attr::SK];
        if let Some(index) = self.index {
            let (pk, sk) = index.attrs();
            attrs.extend([pk, sk]);
        }
        attrs.sort_unstable();
        attrs
    }

    fn partition_attrs(&self) -> (&'static str, &'static str) {
        match self.index {
            Some(index) => index.attrs(),
            None => (attr::PK, attr::SK),
        }
    }
}

fn bad_cursor() -> Invalid {
    Invalid::new("cursor", "is not a cursor of this list")
}

/// Encodes a `LastEvaluatedKey` (string attributes only, as every key of this
/// table is) as an opaque cursor.
pub(crate) fn encode(key: &HashMap<String, AttributeValue>) -> Option<String> {
    let plain: BTreeMap<&str, &str> = key
        .iter()
        .map(|(k, v)| v.as_s().ok().map(|s| (k.as_str(), s.as_str())))
        .collect::<Option<_>>()?;
    let json = serde_json::to_vec(&plain).ok()?;
    Some(URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a cursor for `scope`, or says why it is not one.
pub(crate) fn decode(
    cursor: &str,
    scope: &ListScope<'_>,
) -> Result<HashMap<String, AttributeValue>, Invalid> {
    if cursor.len() > CURSOR_MAX {
        return Err(bad_cursor());
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad_cursor())?;
    let plain: BTreeMap<String, String> =
        serde_json::from_slice(&bytes).map_err(|_| bad_cursor())?;
    let names: Vec<&str> = plain.keys().map(String::as_str).collect();
    if names != scope.key_attrs() {
        return Err(bad_cursor());
    }
    // DynamoDB refuses empty key values and sort keys over 1,024 bytes
    // (partition keys over 2,048); no key this table writes comes near.
    if plain
        .values()
        .any(|v| v.is_empty() || v.len() > MAX_KEY_VALUE_BYTES)
    {
        return Err(bad_cursor());
    }
    let (partition_attr, sort_attr) = scope.partition_attrs();
    if plain.get(partition_attr).map(String::as_str) != Some(scope.partition) {
        return Err(bad_cursor());
    }
    if let Some(prefix) = scope.sort_prefix {
        if !plain.get(sort_attr).is_some_and(|s| s.starts_with(prefix)) {
            return Err(bad_cursor());
        }
    }
    Ok(plain
        .into_iter()
        .map(|(k, v)| (k, AttributeValue::S(v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pairs: &[(&str, &str)]) -> HashMap<String, AttributeValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
            .collect()
    }

    #[test]
    fn cursors_roundtrip_within_their_list() {
        let scope = ListScope {
            index: None,
            partition: "TENANT#A",
            sort_prefix: Some("USER#"),
        };
        let k = key(&[("PK", "TENANT#A"), ("SK", "USER#B")]);
        let c = encode(&k).unwrap();
        assert_eq!(decode(&c, &scope).unwrap(), k);
    }

    #[test]
    fn cursors_from_other_lists_are_refused() {
        let scope = ListScope {
            index: None,
            partition: "TENANT#A",
            sort_prefix: Some("USER#"),
        };
        let other_partition = encode(&key(&[("PK", "TENANT#B"), ("SK", "USER#B")])).unwrap();
        let other_prefix = encode(&key(&[("PK", "TENANT#A"), ("SK", "TENANT#A")])).unwrap();
        let gsi = encode(&key(&[
            ("PK", "TENANT#A"),
            ("SK", "USER#B"),
            ("GSI1PK", "USER#B"),
            ("GSI1SK", "TENANT#A"),
        ]))
        .unwrap();
        for bad in [
            other_partition,
            other_prefix,
            gsi,
            "!!".into(),
            "e30".into(),
            "x".repeat(5000),
            encode(&key(&[("PK", "TENANT#A"), ("SK", "")])).unwrap(),
            encode(&key(&[
                ("PK", "TENANT#A"),
                (
                    "SK",
                    &format!(
                        "{}{}",
                        crate::model::keys::tenant_members_prefix(),
                        "x".repeat(1100)
                    ),
                ),
            ]))
            .unwrap(),
        ] {
            assert_eq!(decode(&bad, &scope).unwrap_err().field, "cursor");
        }
    }

    #[test]
    fn index_cursors_check_the_index_partition() {
        let scope = ListScope {
            index: Some(Index::Gsi2),
            partition: "LIST#TENANT",
            sort_prefix: None,
        };
        let good = key(&[
            ("PK", "TENANT#A"),
            ("SK", "TENANT#A"),
            ("GSI2PK", "LIST#TENANT"),
            ("GSI2SK", "acme"),
        ]);
        assert!(decode(&encode(&good).unwrap(), &scope).is_ok());
        let users = key(&[
            ("PK", "USER#A"),
            ("SK", "USER#A"),
            ("GSI2PK", "LIST#USER#active"),
            ("GSI2SK", "a@b.c"),
        ]);
        assert!(decode(&encode(&users).unwrap(), &scope).is_err());
    }

    #[test]
    fn limits_are_checked() {
        assert_eq!(PageRequest::parse(None, None).unwrap().limit, 50);
        assert_eq!(PageRequest::parse(Some("100"), None).unwrap().limit, 100);
        for bad in ["0", "101", "-1", "ten", ""] {
            assert_eq!(
                PageRequest::parse(Some(bad), None).unwrap_err().field,
                "limit"
            );
        }
    }
}
