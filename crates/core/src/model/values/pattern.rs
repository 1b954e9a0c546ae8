//! Each value's accepted spelling as a regular expression, for the API's
//! OpenAPI document: a string matches exactly when its parser accepts it
//! (before any length rule the document states as `maxLength`), so
//! generated clients and contract testers agree with the server. Written
//! in the common subset of ECMA-262, Python's `re` and Rust's `regex`; the
//! tests hold each against its parser.
//!
//! Where a parser trims, the pattern allows what it trims: Unicode
//! `White_Space`, as Rust's `str::trim` reads it.

/// Unicode `White_Space`, the set `str::trim` and `char::is_whitespace`
/// use, as the inside of a character class.
macro_rules! white_space {
    () => {
        r"\t\n\x0B\x0C\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
    };
}

/// What may never reach a key beside `#`: control characters (`Cc`) and
/// `White_Space`, as the inside of a character class.
macro_rules! space_or_control {
    () => {
        r"\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
    };
}

/// A dotted quad, each part 0-255 without a leading zero.
macro_rules! ipv4 {
    () => {
        r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
    };
}

/// Any ULID, any case ([`super::UserId`] and the other ids).
pub const ULID: &str = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";

/// A tenant name as sent: lower-cased (ASCII) before the rule, so capitals
/// are accepted.
pub const TENANT_NAME: &str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$";
/// The start of a tenant name (`?namePrefix=`): empty for every tenant.
pub const TENANT_NAME_PREFIX: &str = "^[A-Za-z0-9._-]{0,64}$";
/// A role or policy name: never lower-cased.
pub const NAME: &str = "^[a-z0-9][a-z0-9._-]{0,63}$";
/// The start of a policy name (`?prefix=`): empty for every policy.
pub const NAME_PREFIX: &str = "^[a-z0-9._-]{0,64}$";
/// A policy id chosen by its writer.
pub const POLICY_ID: &str = "^[A-Za-z0-9_-]{1,200}$";
/// A preferred username: trimmed, lower-cased (ASCII), then a name.
pub const PREFERRED_USERNAME: &str = concat!(
    "^[",
    white_space!(),
    "]*[A-Za-z0-9._-]{1,64}[",
    white_space!(),
    "]*$"
);
/// An email address: trimmed, one `@` between a local part and a domain
/// of dot-separated labels, nothing that may not reach a key.
pub const EMAIL: &str = concat!(
    "^[",
    white_space!(),
    "]*[^@#",
    space_or_control!(),
    "]+@[^@#.",
    space_or_control!(),
    r"]+(\.[^@#.",
    space_or_control!(),
    "]+)*[",
    white_space!(),
    "]*$"
);
/// The start of an email address (`?emailPrefix=`): trimmed; empty (or
/// only white space) for every user.
pub const EMAIL_PREFIX: &str = concat!(
    "^[",
    white_space!(),
    "]*([^#",
    space_or_control!(),
    "]+[",
    white_space!(),
    "]*)?$"
);
/// A phone number in E.164, trimmed.
pub const PHONE: &str = concat!(
    "^[",
    white_space!(),
    r"]*\+[1-9][0-9]{1,14}[",
    white_space!(),
    "]*$"
);
/// Free text: no control character but newline and tab.
pub const TEXT: &str = r"^[^\x00-\x08\x0B-\x1F\x7F-\x9F]*$";
/// A permission: `*`, or up to four `:`-separated segments of which only
/// the last may be `*`.
pub const PERMISSION: &str = r"^(\*|([a-z0-9._-]+:){0,3}([a-z0-9._-]+|\*))$";
/// An issuer: an http(s) URL of a host name, an optional port and path, no
/// query or fragment (OpenID Connect's rule), no white space or control
/// characters.
pub const ISSUER: &str = concat!(
    r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^?#",
    space_or_control!(),
    "]*)?$"
);
/// A subject: no control characters.
pub const SUBJECT: &str = r"^[^\x00-\x1F\x7F-\x9F]+$";
/// A verification code: trimmed, 1 to 64 characters.
pub const CODE: &str = concat!(
    "^[",
    white_space!(),
    "]*[^",
    white_space!(),
    r"]([\s\S]{0,62}[^",
    white_space!(),
    "])?[",
    white_space!(),
    "]*$"
);

/// An IPv4 address (`Ipv4Addr`'s dotted quad: no leading zeros) or an
/// IPv6 address (RFC 4291's forms, an IPv4 tail among them; no zone).
pub const IP_ADDRESS: &str = concat!(
    "^(",
    ipv4!(),
    "|",
    r"([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}",
    r"|([0-9A-Fa-f]{1,4}:){6}",
    ipv4!(),
    r"|([0-9A-Fa-f]{1,4}:){1,7}:",
    r"|([0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}",
    r"|([0-9A-Fa-f]{1,4}:){1,5}(:[0-9A-Fa-f]{1,4}){1,2}",
    r"|([0-9A-Fa-f]{1,4}:){1,4}(:[0-9A-Fa-f]{1,4}){1,3}",
    r"|([0-9A-Fa-f]{1,4}:){1,3}(:[0-9A-Fa-f]{1,4}){1,4}",
    r"|([0-9A-Fa-f]{1,4}:){1,2}(:[0-9A-Fa-f]{1,4}){1,5}",
    r"|[0-9A-Fa-f]{1,4}:(:[0-9A-Fa-f]{1,4}){1,6}",
    r"|:(:[0-9A-Fa-f]{1,4}){1,7}",
    r"|::",
    r"|([0-9A-Fa-f]{1,4}:){1,5}:",
    ipv4!(),
    r"|([0-9A-Fa-f]{1,4}:){1,4}:([0-9A-Fa-f]{1,4}:)",
    ipv4!(),
    r"|([0-9A-Fa-f]{1,4}:){1,3}:([0-9A-Fa-f]{1,4}:){1,2}",
    ipv4!(),
    r"|([0-9A-Fa-f]{1,4}:){1,2}:([0-9A-Fa-f]{1,4}:){1,3}",
    ipv4!(),
    r"|[0-9A-Fa-f]{1,4}::([0-9A-Fa-f]{1,4}:){1,4}",
    ipv4!(),
    r"|::([0-9A-Fa-f]{1,4}:){0,5}",
    ipv4!(),
    ")$"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::values::{
        Email, EmailPrefix, Issuer, NamePrefix, Permission, Phone, PolicyId, PolicyName,
        PreferredUsername, RoleName, Subject, TenantName, TenantNamePrefix, Text, UserId,
    };

    /// Strings that sit on every rule's edges: empty, white space of each
    /// kind around and inside, control characters, capitals, the Kelvin
    /// sign (which lower-cases to `k`), dots, `@`, `#`, `*`, colons.
    fn corpus() -> Vec<String> {
        let atoms = [
            "",
            "a",
            "A",
            "z9",
            "-a",
            ".a",
            "a.",
            "a..b",
            "a_b-c.d",
            "\u{212A}",
            "#",
            "@",
            "*",
            ":",
            "a:b",
            "a:*",
            "*:a",
            "a::b",
            "a:b:c:d",
            "a:b:c:d:e",
            " ",
            "\t",
            "\n",
            "\u{0B}",
            "\u{85}",
            "\u{A0}",
            "\u{1680}",
            "\u{2003}",
            "\u{2028}",
            "\u{202F}",
            "\u{3000}",
            "\u{FEFF}",
            "\u{1C}",
            "\u{0}",
            "\u{7F}",
            "\u{9F}",
            "é",
            "日本",
            "+",
            "+1",
            "+12",
            "+0123",
            "+123456789012345",
            "+1234567890123456",
            "http://",
            "https://x",
            "ftp://x",
            "https://h:443/p",
            "https://h:/p",
            "https://h:123456",
            "http://[::1]:80",
            "/p?q",
            "/p#f",
            ":8",
            "/",
        ];
        let mut out: Vec<String> = atoms.iter().map(|s| s.to_string()).collect();
        for a in atoms {
            for b in atoms {
                out.push(format!("{a}{b}"));
                out.push(format!("{a}@{b}"));
                out.push(format!("{a}x@y.{b}"));
                out.push(format!("{a}https://h{b}"));
            }
        }
        out.push("a".repeat(64));
        out.push("a".repeat(65));
        out.push(format!("b{}", "a".repeat(63)));
        out.push(" +15551234567 ".into());
        out.push(" Dana@Example.COM ".into());
        out.push("01ARZ3NDEKTSV4RRFFQ69G5FAV".into());
        out.push("01arz3ndektsv4rrffq69g5fav".into());
        out.push("81ARZ3NDEKTSV4RRFFQ69G5FAV".into());
        out.push("01ARZ3NDEKTSV4RRFFQ69G5FAI".into());
        out
    }

    /// Addresses of every form, and near misses.
    fn ip_corpus() -> Vec<String> {
        let mut out: Vec<String> = [
            "0.0.0.0",
            "255.255.255.255",
            "256.1.1.1",
            "01.1.1.1",
            "1.1.1",
            "1.1.1.1.1",
            "10.0.0.1 ",
            "::",
            "::1",
            "1::",
            "1::1",
            "fe80::1%eth0",
            "2001:db8::8a2e:370:7334",
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1::3:4:5:6:7:8",
            "1:2:3:4:5:6:1.2.3.4",
            "::ffff:1.2.3.4",
            "::1.2.3.4",
            "1::1.2.3.4",
            "1:2:3:4:5::1.2.3.4",
            "1:2:3:4:5:6::1.2.3.4",
            "::ffff:01.2.3.4",
            "12345::",
            ":::",
            "1:::1",
            "1::2::3",
            "G::",
            "[::1]",
            "",
            " ",
            "::ffff:1.2.3",
            "1:2:3:4:5:6:7:1.2.3.4",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every way to elide zeros in a full address, with and without an
        // IPv4 tail.
        for tail in ["7:8", "1.2.3.4"] {
            let head = ["1", "2", "3", "4", "5", "6"];
            for start in 0..=head.len() {
                for end in start..=head.len() {
                    let left = head[..start].join(":");
                    let right: Vec<&str> = head[end..].iter().copied().chain([tail]).collect();
                    out.push(format!("{left}::{}", right.join(":")));
                }
            }
        }
        out
    }

    fn agrees(pattern: &str, max_chars: Option<usize>, accepts: impl Fn(&str) -> bool) {
        agrees_on(corpus(), pattern, max_chars, accepts);
    }

    fn agrees_on(
        strings: Vec<String>,
        pattern: &str,
        max_chars: Option<usize>,
        accepts: impl Fn(&str) -> bool,
    ) {
        let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        for s in strings {
            if max_chars.is_some_and(|m| s.chars().count() > m) {
                continue;
            }
            assert_eq!(
                re.is_match(&s),
                accepts(&s),
                "{pattern} and the parser disagree on {s:?}"
            );
        }
    }

    #[test]
    fn every_pattern_accepts_exactly_what_its_parser_accepts() {
        agrees(ULID, None, |s| UserId::parse(s).is_ok());
        agrees(TENANT_NAME, None, |s| TenantName::parse(s).is_ok());
        agrees(TENANT_NAME_PREFIX, None, |s| {
            TenantNamePrefix::parse_field("p", s).is_ok()
        });
        agrees(NAME, None, |s| RoleName::parse(s).is_ok());
        agrees(NAME, None, |s| PolicyName::parse(s).is_ok());
        agrees(NAME_PREFIX, None, |s| {
            NamePrefix::parse_field("p", s).is_ok()
        });
        agrees(POLICY_ID, None, |s| PolicyId::parse(s).is_ok());
        agrees(PREFERRED_USERNAME, None, |s| {
            PreferredUsername::parse(s).is_ok()
        });
        agrees(EMAIL, Some(crate::model::values::EMAIL_MAX), |s| {
            Email::parse(s).is_ok()
        });
        agrees(EMAIL_PREFIX, Some(crate::model::values::EMAIL_MAX), |s| {
            EmailPrefix::parse_field("p", s).is_ok()
        });
        agrees(PHONE, None, |s| Phone::parse(s).is_ok());
        agrees(TEXT, Some(crate::model::values::TEXT_MAX), |s| {
            Text::parse(s).is_ok()
        });
        agrees(
            PERMISSION,
            Some(crate::model::values::PERMISSION_MAX),
            |s| Permission::parse(s).is_ok(),
        );
        agrees(ISSUER, Some(super::super::ISSUER_MAX), |s| {
            Issuer::parse(s).is_ok()
        });
        agrees(SUBJECT, Some(super::super::SUBJECT_MAX), |s| {
            Subject::parse(s).is_ok()
        });
        agrees_on(
            corpus().into_iter().chain(ip_corpus()).collect(),
            IP_ADDRESS,
            None,
            |s| s.parse::<std::net::IpAddr>().is_ok(),
        );
        agrees(CODE, None, |s| {
            crate::model::values::verification_code(s).is_ok()
        });
    }
}
