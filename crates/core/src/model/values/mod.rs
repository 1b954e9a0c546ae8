//! Validated value types: every id, name, email, phone and permission that can
//! reach a key or an item is parsed here first, and a rejection names the field
//! and the rule it broke.
//!
//! After a value is constructed it is known to be normalized (trimmed or
//! lower-cased where the rules say so) and free of `#`, whitespace and control
//! characters, so `keys` can format it without escaping.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

/// A value that broke a rule. `field` is the API field name (camelCase), or a
/// path such as `permissions[2]` for list elements.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Invalid {
    pub field: String,
    pub reason: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same rule broken by an element of a list field: `roles[3]`.
    pub fn at(self, index: usize) -> Self {
        Self {
            field: format!("{}[{index}]", self.field),
            reason: self.reason,
        }
    }
}

/// Longest name (tenant, role, policy) and preferred username, in characters.
pub const NAME_MAX: usize = 64;
/// Longest email address (RFC 5321 path limit).
pub const EMAIL_MAX: usize = 254;
/// Longest permission string.
pub const PERMISSION_MAX: usize = 128;
/// Most `:`-separated segments in a permission.
pub const PERMISSION_SEGMENTS_MAX: usize = 4;
/// Longest opaque policy id (Verified Permissions ids are far shorter).
pub const POLICY_ID_MAX: usize = 200;
/// Longest free-text field (given/family name, descriptions), in characters.
pub const TEXT_MAX: usize = 1024;

fn check_len(field: &str, value: &str, min: usize, max: usize) -> Result<(), Invalid> {
    // Count characters only after a cheap byte check, so a 10 MB value is
    // rejected without walking it.
    if value.len() > max * 4 {
        return Err(Invalid::new(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    let n = value.chars().count();
    if n < min {
        return Err(Invalid::new(
            field,
            if min == 1 {
                "must not be empty".to_string()
            } else {
                format!("must be at least {min} characters")
            },
        ));
    }
    if n > max {
        return Err(Invalid::new(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(())
}

/// Rejects what may never reach a key: `#`, whitespace, control characters.
fn check_key_safe(field: &str, value: &str) -> Result<(), Invalid> {
    if let Some(c) = value
        .chars()
        .find(|c| *c == '#' || c.is_whitespace() || c.is_control())
    {
        let what = match c {
            '#' => "'#'".to_string(),
            c if c.is_control() => format!("a control character (U+{:04X})", c as u32),
            ' ' => "a space".to_string(),
            c => format!("a space or other whitespace (U+{:04X})", c as u32),
        };
        return Err(Invalid::new(field, format!("must not contain {what}")));
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
}

/// Names of tenants, roles and policies, and preferred usernames: 1-64 of
/// `a-z 0-9 . _ -`; names must also start with a letter or digit.
fn check_name(field: &str, value: &str, must_start_alnum: bool) -> Result<(), Invalid> {
    check_len(field, value, 1, NAME_MAX)?;
    check_key_safe(field, value)?;
    if let Some(c) = value.chars().find(|c| !is_name_char(*c)) {
        return Err(Invalid::new(
            field,
            format!("must contain only a-z, 0-9, '.', '_' and '-' (found {c:?})"),
        ));
    }
    if must_start_alnum && !value.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(Invalid::new(field, "must start with a letter or digit"));
    }
    Ok(())
}

/// `FromStr` and `TryFrom<String>` through the type's own `parse` (so serde
/// reads it back validated), for both kinds of value below.
macro_rules! parsed_from_strings {
    ($ty:ident) => {
        impl FromStr for $ty {
            type Err = Invalid;
            fn from_str(s: &str) -> Result<Self, Invalid> {
                Self::parse(s)
            }
        }

        impl TryFrom<String> for $ty {
            type Error = Invalid;
            fn try_from(s: String) -> Result<Self, Invalid> {
                Self::parse(&s)
            }
        }
    };
}

/// Implements the string plumbing shared by every validated string type:
/// `as_str`, `Display`, `AsRef<str>`, serde through `String` (so an item read
/// back from the table is re-validated), and `FromStr` with the default field.
macro_rules! string_value {
    ($ty:ident, $field:literal) => {
        impl $ty {
            /// The API field this value is named by in errors.
            pub const FIELD: &'static str = $field;

            /// Parses a value for the default field.
            pub fn parse(raw: &str) -> Result<Self, Invalid> {
                Self::parse_field(Self::FIELD, raw)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        parsed_from_strings!($ty);

        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                v.0
            }
        }
    };
}

/// ULID identifiers we generate. Kept as `Ulid` so the canonical (upper-case
/// Crockford) form is what reaches keys, whatever case the caller sent.
macro_rules! ulid_id {
    ($(#[$doc:meta])* $ty:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $ty(Ulid);

        impl $ty {
            pub const FIELD: &'static str = $field;

            /// A fresh, time-ordered id.
            pub fn generate() -> Self {
                Self(Ulid::new())
            }

            pub fn parse(raw: &str) -> Result<Self, Invalid> {
                Self::parse_field(Self::FIELD, raw)
            }

            pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
                if raw.is_empty() {
                    return Err(Invalid::new(field, "must not be empty"));
                }
                if raw.len() != ulid::ULID_LEN {
                    return Err(Invalid::new(field, "must be a ULID (26 Crockford base32 characters)"));
                }
                // Strict: the decoder tolerates overflow and letter aliases,
                // but only the canonical spelling (any case) is an id.
                match Ulid::from_string(raw) {
                    Ok(id) if id.to_string().eq_ignore_ascii_case(raw) => Ok(Self(id)),
                    _ => Err(Invalid::new(field, "must be a ULID (26 Crockford base32 characters)")),
                }
            }

            pub fn ulid(&self) -> Ulid {
                self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        parsed_from_strings!($ty);

        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                v.0.to_string()
            }
        }
    };
}

ulid_id!(
    /// A tenant's id.
    TenantId,
    "tenantId"
);
ulid_id!(
    /// A user's id.
    UserId,
    "userId"
);
ulid_id!(
    /// A role's id.
    RoleId,
    "roleId"
);
ulid_id!(
    /// A tenant grant's id.
    TenantGrantId,
    "tenantGrantId"
);
ulid_id!(
    /// The id of one of a user's email addresses.
    EmailId,
    "emailId"
);
ulid_id!(
    /// An invitation's id.
    InvitationId,
    "invitationId"
);
ulid_id!(
    /// The id of a tenant directory's SCIM bearer token.
    DirectoryTokenId,
    "tokenId"
);
ulid_id!(
    /// The SCIM `id` of a group of a tenant's directory.
    DirectoryGroupId,
    "id"
);
ulid_id!(
    /// The SCIM `id` of a person a tenant's directory provisions.
    DirectoryUserId,
    "id"
);
ulid_id!(
    /// The id of one recorded change (time-ordered: newest sorts last).
    ChangeId,
    "changeId"
);
ulid_id!(
    /// The id of an identity `(issuer, subject)`: its digest, written as a
    /// ULID (`IdentityId::of`), so the same identity always has the same
    /// id and the id is safe in a key whatever the subject holds.
    IdentityId,
    "identityId"
);

mod identity;
pub mod pattern;
pub use identity::{Issuer, Subject, ISSUER_MAX, SUBJECT_MAX};

/// A tenant name: lower-cased first (ASCII letters only, so uniqueness is
/// case-insensitive and no other letter folds into a name), then
/// 1-64 of `a-z 0-9 . _ -` starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantName(String);
string_value!(TenantName, "name");

impl TenantName {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let lowered = raw.to_ascii_lowercase();
        check_name(field, &lowered, true)?;
        Ok(Self(lowered))
    }
}

/// A role name, unique within its scope: 1-64 of `a-z 0-9 . _ -` starting
/// with a letter or digit. Not lower-cased: `Admin` is rejected, not renamed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RoleName(String);
string_value!(RoleName, "name");

impl RoleName {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_name(field, raw, true)?;
        Ok(Self(raw.to_string()))
    }
}

/// A policy name, unique across the table: same rules as role names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PolicyName(String);
string_value!(PolicyName, "name");

impl PolicyName {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_name(field, raw, true)?;
        Ok(Self(raw.to_string()))
    }
}

/// The start of a policy's or a role's name, for listing by prefix (case
/// as names are): empty (every one) or up to 64 of the name characters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NamePrefix(String);
string_value!(NamePrefix, "prefix");

impl NamePrefix {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        if !raw.is_empty() {
            check_name(field, raw, false)?;
        }
        Ok(Self(raw.to_string()))
    }
}

/// The start of a tenant name, for listing by prefix: lower-cased as names
/// are, then empty (every tenant) or up to 64 of the name characters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TenantNamePrefix(String);
string_value!(TenantNamePrefix, "namePrefix");

impl TenantNamePrefix {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let lowered = raw.to_ascii_lowercase();
        if !lowered.is_empty() {
            check_name(field, &lowered, false)?;
        }
        Ok(Self(lowered))
    }
}

/// The start of an email address, for listing users by prefix: trimmed and
/// lower-cased as addresses are, then empty (every user) or up to the
/// length of an address, with nothing a key may not hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmailPrefix(String);
string_value!(EmailPrefix, "emailPrefix");

impl EmailPrefix {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let normalized = raw.trim().to_lowercase();
        if !normalized.is_empty() {
            check_len(field, &normalized, 1, EMAIL_MAX)?;
            check_key_safe(field, &normalized)?;
        }
        Ok(Self(normalized))
    }
}

/// The id Verified Permissions gave a policy: opaque, 1-200 of
/// `A-Z a-z 0-9 _ -`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PolicyId(String);
string_value!(PolicyId, "policyId");

impl PolicyId {
    /// A generated id for a policy created without one (a ULID string).
    pub fn generate() -> Self {
        Self(Ulid::new().to_string())
    }

    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_len(field, raw, 1, POLICY_ID_MAX)?;
        check_key_safe(field, raw)?;
        if let Some(c) = raw
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Err(Invalid::new(
                field,
                format!("must contain only A-Z, a-z, 0-9, '_' and '-' (found {c:?})"),
            ));
        }
        Ok(Self(raw.to_string()))
    }
}

/// An email address, trimmed and lower-cased. No provider-specific rewriting
/// (Gmail dots and `+tags` are kept: whether they name one mailbox is a
/// business decision). Checked for shape, not deliverability.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Email(String);
string_value!(Email, "email");

impl Email {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let normalized = raw.trim().to_lowercase();
        check_len(field, &normalized, 1, EMAIL_MAX)?;
        check_key_safe(field, &normalized)?;
        let Some((local, domain)) = normalized.split_once('@') else {
            return Err(Invalid::new(field, "must contain '@'"));
        };
        if local.is_empty() || domain.is_empty() {
            return Err(Invalid::new(
                field,
                "must have a local part and a domain around '@'",
            ));
        }
        if domain.contains('@') {
            return Err(Invalid::new(field, "must contain exactly one '@'"));
        }
        if domain.starts_with('.') || domain.ends_with('.') || domain.contains("..") {
            return Err(Invalid::new(field, "domain is not a valid host name"));
        }
        Ok(Self(normalized))
    }
}

/// Longest verification code, in characters.
pub const CODE_MAX: usize = 64;

/// A verification code as a caller sends it: trimmed, 1 to 64 characters
/// (compared with the code sent, so nothing else is checked).
pub fn verification_code(raw: &str) -> Result<&str, Invalid> {
    let code = raw.trim();
    if code.is_empty() || code.chars().count() > CODE_MAX {
        return Err(Invalid::new("code", "must be the code sent to the address"));
    }
    Ok(code)
}

/// A phone number in E.164: `+`, a non-zero digit, then up to 14 more digits.
/// Surrounding whitespace is trimmed; nothing else is rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Phone(String);
string_value!(Phone, "phone");

impl Phone {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(Invalid::new(field, "must not be empty"));
        }
        let rule = "must be E.164: '+' then 2 to 15 digits, the first not 0";
        let Some(digits) = trimmed.strip_prefix('+') else {
            return Err(Invalid::new(field, rule));
        };
        let ok = (2..=15).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        if !ok {
            return Err(Invalid::new(field, rule));
        }
        Ok(Self(trimmed.to_string()))
    }
}

/// A preferred username: trimmed and lower-cased (ASCII), then 1-64 of
/// `a-z 0-9 . _ -`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PreferredUsername(String);
string_value!(PreferredUsername, "preferredUsername");

impl PreferredUsername {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        let normalized = raw.trim().to_ascii_lowercase();
        check_name(field, &normalized, false)?;
        Ok(Self(normalized))
    }
}

/// Free text that never reaches a key (given and family names, descriptions):
/// at most 1,024 characters, no control characters other than newline/tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Text(String);
string_value!(Text, "text");

impl Text {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_len(field, raw, 0, TEXT_MAX)?;
        if let Some(c) = raw
            .chars()
            .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        {
            return Err(Invalid::new(
                field,
                format!("must not contain control character U+{:04X}", c as u32),
            ));
        }
        Ok(Self(raw.to_string()))
    }
}

/// A permission: `*` alone, or 1-4 `:`-separated segments of
/// `a-z 0-9 _ . -` of which only the last may be `*`. At most 128 characters.
///
/// As a grant, `*` matches everything, `ticket:*` every permission starting
/// with `ticket:`, anything else only itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Permission(String);
string_value!(Permission, "permissions");

impl Permission {
    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        check_len(field, raw, 1, PERMISSION_MAX)?;
        check_key_safe(field, raw)?;
        if raw == "*" {
            return Ok(Self(raw.to_string()));
        }
        let segments: Vec<&str> = raw.split(':').collect();
        if segments.len() > PERMISSION_SEGMENTS_MAX {
            return Err(Invalid::new(
                field,
                format!("must have at most {PERMISSION_SEGMENTS_MAX} ':'-separated segments"),
            ));
        }
        let last = segments.len() - 1;
        for (i, segment) in segments.iter().enumerate() {
            if *segment == "*" && i == last {
                continue;
            }
            if segment.is_empty() {
                return Err(Invalid::new(field, "must not have an empty segment"));
            }
            if segment.contains('*') {
                return Err(Invalid::new(
                    field,
                    "'*' may only stand alone as the last segment",
                ));
            }
            if let Some(c) = segment.chars().find(|c| !is_name_char(*c)) {
                return Err(Invalid::new(
                    field,
                    format!("segments must contain only a-z, 0-9, '_', '.' and '-' (found {c:?})"),
                ));
            }
        }
        Ok(Self(raw.to_string()))
    }

    /// Whether holding `self` covers `required` (equal, or a wildcard over it).
    pub fn covers(&self, required: &str) -> bool {
        match self.0.strip_suffix('*') {
            // `*` alone: prefix "" matches everything; `a:b:*`: prefix "a:b:".
            Some(prefix) => required.starts_with(prefix),
            None => self.0 == required,
        }
    }

    /// Whether this permission is a wildcard (`*` or `...:*`).
    pub fn is_wildcard(&self) -> bool {
        self.0.ends_with('*')
    }
}

/// Whether any of `held` covers `required`.
pub fn any_covers<'a>(held: impl IntoIterator<Item = &'a Permission>, required: &str) -> bool {
    held.into_iter().any(|p| p.covers(required))
}

/// Where a role may be used: in tenant grants, or as a user's global role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleScope {
    Tenant,
    Global,
}

impl RoleScope {
    pub const FIELD: &'static str = "scope";

    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        Self::parse_field(Self::FIELD, raw)
    }

    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        match raw {
            "tenant" => Ok(Self::Tenant),
            "global" => Ok(Self::Global),
            _ => Err(Invalid::new(field, "must be 'tenant' or 'global'")),
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Tenant => "tenant",
            Self::Global => "global",
        }
    }
}

impl fmt::Display for RoleScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `status` value of a tenant or user whose delete has been accepted
/// and whose grants are still being removed (in the background).
pub const DELETING: &str = "deleting";

/// A user's lifecycle state. Only `active` users are ever allowed.
/// `deleting` is set by a hard delete only, never by a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UserStatus {
    #[default]
    Active,
    Suspended,
    Deleted,
    /// Hard-deleted; the user's grants are being removed.
    Deleting,
}

impl UserStatus {
    pub const FIELD: &'static str = "status";

    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        Self::parse_field(Self::FIELD, raw)
    }

    pub fn parse_field(field: &str, raw: &str) -> Result<Self, Invalid> {
        match raw {
            "active" => Ok(Self::Active),
            "suspended" => Ok(Self::Suspended),
            "deleted" => Ok(Self::Deleted),
            _ => Err(Invalid::new(
                field,
                "must be 'active', 'suspended' or 'deleted'",
            )),
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Suspended => "suspended",
            Self::Deleted => "deleted",
            Self::Deleting => DELETING,
        }
    }
}

impl fmt::Display for UserStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tenant's lifecycle state: `deleting` from the moment its delete is
/// accepted until its grants are gone (then the item goes too). Set by the
/// system, never by a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TenantStatus {
    #[default]
    Active,
    Deleting,
}

impl TenantStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Deleting => DELETING,
        }
    }
}

/// Parses every element of a list field, naming the bad element by index,
/// rejecting duplicates and lists longer than `max`.
pub fn parse_list<T: PartialEq>(
    field: &str,
    raw: &[String],
    max: usize,
    parse: impl Fn(&str, &str) -> Result<T, Invalid>,
) -> Result<Vec<T>, Invalid> {
    if raw.len() > max {
        return Err(Invalid::new(
            field,
            format!("must have at most {max} elements"),
        ));
    }
    let mut out: Vec<T> = Vec::with_capacity(raw.len());
    for (i, value) in raw.iter().enumerate() {
        let parsed = parse(field, value).map_err(|e| Invalid {
            field: format!("{field}[{i}]"),
            reason: e.reason,
        })?;
        if out.contains(&parsed) {
            return Err(Invalid::new(format!("{field}[{i}]"), "is a duplicate"));
        }
        out.push(parsed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
