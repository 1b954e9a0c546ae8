//! An identity a token carries: the issuer that vouches for it (its `iss`,
//! an http(s) URL) and the subject it names (its `sub`, or the claim the
//! issuer's profile names: any string the issuer chooses, up to 255
//! characters). The same subject under two issuers is two people, so an
//! identity is the pair, and its id is their digest.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use ulid::Ulid;

use super::{check_len, IdentityId, Invalid};

/// Longest issuer URL accepted.
pub const ISSUER_MAX: usize = 512;
/// Longest subject accepted, in characters.
pub const SUBJECT_MAX: usize = 255;

/// An issuer: an `https://` (or, for a local issuer, `http://`) URL,
/// compared exactly as tokens carry it.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Issuer(String);
string_value!(Issuer, "issuer");

impl Issuer {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_len(field, raw, 1, ISSUER_MAX)?;
        let Some(rest) = raw
            .strip_prefix("https://")
            .or_else(|| raw.strip_prefix("http://"))
        else {
            return Err(Invalid::new(field, "must be an https:// (or http://) URL"));
        };
        if let Some(c) = raw.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(Invalid::new(
                field,
                format!("must not contain U+{:04X}", c as u32),
            ));
        }
        // OpenID Connect: a host, an optional port and path, no query or
        // fragment.
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        let port_ok = port
            .is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
        if !host_ok || !port_ok || path.contains(['?', '#']) {
            return Err(Invalid::new(
                field,
                "must be a host name (letters, digits, '.', '-'), an optional port and path: no query or fragment",
            ));
        }
        Ok(Self(raw.to_string()))
    }
}

/// A subject: what the issuer names the person by, taken as it is (case
/// and all), 1-255 characters, no control characters.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Subject(String);
string_value!(Subject, "subject");

impl Subject {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_len(field, raw, 1, SUBJECT_MAX)?;
        if let Some(c) = raw.chars().find(|c| c.is_control()) {
            return Err(Invalid::new(
                field,
                format!("must not contain control character U+{:04X}", c as u32),
            ));
        }
        Ok(Self(raw.to_string()))
    }
}

impl IdentityId {
    /// The id of `(issuer, subject)`: the first 128 bits of the SHA-256 of
    /// the two, length-prefixed, written as a ULID.
    pub fn of(issuer: &Issuer, subject: &Subject) -> Self {
        let mut digest = Sha256::new();
        for part in [issuer.as_str(), subject.as_str()] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part.as_bytes());
        }
        let bytes: [u8; 16] = digest.finalize()[..16]
            .try_into()
            .expect("SHA-256 has 32 bytes");
        Self(Ulid::from_bytes(bytes))
    }
}
