//! The issuers the authorizer trusts, each with its token profile: where
//! its keys are (its JWKS, or its discovery document's `jwks_uri`; only
//! there: never a URL or key a token names), which
//! audiences or client ids it accepts, which kind of token (access or ID),
//! which algorithms, which claim names the person, whether that claim is
//! an identity to look up or the user's own id, where the email and its
//! verification are, the one tenant it may be bound to, and whether its
//! users may sign up on first sign-in. Read once at start-up from
//! `TRUSTED_ISSUERS` (a JSON list) and the single-issuer settings
//! (`JWT_ISSUER`, `JWT_AUDIENCE`, `JWKS_URL`, `USER_ID_CLAIM`); a malformed
//! list stops the function, naming the setting and the entry.

use jsonwebtoken::Algorithm;
use serde::Deserialize;

use authz_core::model::values::{Issuer, TenantId};
use authz_core::runtime::config::ConfigError;

/// The setting that lists the trusted issuers.
pub const TRUSTED_ISSUERS: &str = "TRUSTED_ISSUERS";

/// The placeholder a multi-tenant issuer's URL holds for the tenant id its
/// tokens carry in `tid` (Entra ID's
/// `https://login.microsoftonline.com/{tid}/v2.0`).
pub const TID_PLACEHOLDER: &str = "{tid}";

/// Which tokens an issuer's profile accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenUse {
    /// Access tokens only: Cognito's `token_use: access`, or an RFC 9068
    /// JWT access token (`typ: at+jwt`). An ID token is refused.
    Access,
    /// ID tokens only: Cognito's `token_use: id`, or a token without
    /// `token_use` that is not typed as an access token.
    Id,
    /// Either (the single-issuer settings, as before them).
    Any,
}

/// How a token's subject becomes a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserBy {
    /// The `(issuer, subject)` identity is looked up among those linked to
    /// users.
    Identity,
    /// The claim holds the user's own id (a ULID), for issuers that put it
    /// in the token.
    Claim(String),
}

/// Who may sign up on first sign-in with this issuer's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignUp {
    /// Nobody (the default): an identity must be linked by an admin.
    Off,
    /// Anyone the issuer vouches for: allowed only for an issuer bound to a
    /// tenant or explicitly opened to public sign-up (this).
    Open,
    /// Anyone the issuer vouches for, as `Open`, stated for an issuer bound
    /// to a tenant (which it must be): only addresses of its
    /// `emailDomains`, and the user has no grant until the tenant's admins
    /// give one.
    Tenant,
}

/// One trusted issuer and how its tokens are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerProfile {
    /// `iss`, exactly; or with [`TID_PLACEHOLDER`], which the token's `tid`
    /// fills.
    pub issuer: String,
    /// Where its keys are published.
    pub keys: KeysAt,
    /// Accepted `aud` values, or `client_id` (Cognito access tokens).
    pub audiences: Vec<String>,
    pub token_use: TokenUse,
    /// The algorithms its keys may sign with (each key's own algorithm must
    /// be one of them).
    pub algorithms: Vec<Algorithm>,
    /// The claim naming the person (`sub`; Entra ID: `oid`, never `email`).
    pub subject_claim: String,
    pub user: UserBy,
    pub email_claim: String,
    pub email_verified_claim: String,
    /// The one tenant its tokens may act in, if it is bound to one.
    pub tenant: Option<TenantId>,
    pub sign_up: SignUp,
    /// Email domains this issuer is authoritative for: a sign-up with a
    /// verified address of one of them may take over an existing user with
    /// that address. Empty: never.
    pub email_domains: Vec<String>,
}

impl IssuerProfile {
    /// The concrete issuer a token with these claims must carry: the
    /// profile's, with the token's `tid` in place of [`TID_PLACEHOLDER`]
    /// (`None` when the token has no usable `tid`).
    pub fn concrete_issuer(&self, tid: Option<&str>) -> Option<String> {
        if !self.issuer.contains(TID_PLACEHOLDER) {
            return Some(self.issuer.clone());
        }
        let tid = tid.filter(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })?;
        Some(self.issuer.replace(TID_PLACEHOLDER, tid))
    }

    /// Whether a token whose (unverified) `iss` is `iss` may be this
    /// issuer's.
    pub fn matches(&self, iss: &str, tid: Option<&str>) -> bool {
        self.concrete_issuer(tid).as_deref() == Some(iss)
    }
}

/// Where an issuer's keys are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysAt {
    /// Its JWKS document's URL.
    Jwks(String),
    /// Its OpenID discovery document's URL, whose `jwks_uri` names the
    /// JWKS (one more fetch on an instance's first key).
    Discovery(String),
}

/// An entry of `TRUSTED_ISSUERS`, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawIssuer {
    issuer: String,
    #[serde(default)]
    jwks_url: Option<String>,
    #[serde(default)]
    discovery_url: Option<String>,
    audiences: Vec<String>,
    #[serde(default = "access")]
    token_use: TokenUse,
    #[serde(default)]
    algorithms: Option<Vec<String>>,
    #[serde(default)]
    subject_claim: Option<String>,
    #[serde(default)]
    user_id_claim: Option<String>,
    #[serde(default)]
    email_claim: Option<String>,
    #[serde(default)]
    email_verified_claim: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default = "off")]
    sign_up: SignUp,
    #[serde(default)]
    email_domains: Vec<String>,
}

fn access() -> TokenUse {
    TokenUse::Access
}

fn off() -> SignUp {
    SignUp::Off
}

/// Every asymmetric algorithm `jsonwebtoken` verifies: the default.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The keys' URL of the single-issuer settings when `JWKS_URL` is not
/// given: the issuer's well-known JWKS.
pub fn default_jwks_url(issuer: &str) -> String {
    format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/'))
}

/// An issuer's discovery document (OpenID Connect Discovery 1.0): where a
/// listed issuer's keys are found when neither URL is given.
pub fn default_discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

/// Consumer email domains: a tenant's own IdP speaks for its
/// organization's domains, never for addresses anyone can open.
const CONSUMER_DOMAINS: [&str; 16] = [
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "hotmail.com",
    "live.com",
    "msn.com",
    "yahoo.com",
    "icloud.com",
    "me.com",
    "aol.com",
    "proton.me",
    "protonmail.com",
    "gmx.com",
    "mail.com",
    "yandex.com",
    "qq.com",
];

/// An `https://` URL, or an `http://` one on this machine's loopback (a
/// local provider): keys and issuers fetched over plain HTTP from anywhere
/// else could be anyone's.
pub(crate) fn check_url(var: &str, url: &str) -> Result<(), ConfigError> {
    let Ok(uri) = url.parse::<hyper::Uri>() else {
        return Err(ConfigError::new(var, "is not a valid URL"));
    };
    match uri.scheme_str() {
        Some("https") if uri.host().is_some() => Ok(()),
        Some("http") if uri.host().is_some_and(is_loopback) => Ok(()),
        Some("http") => Err(ConfigError::new(
            var,
            "must be https:// (http:// only for a local provider on 127.0.0.1, [::1] or localhost)",
        )),
        _ => Err(ConfigError::new(var, "must be an https:// URL")),
    }
}

pub(crate) fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Parses `TRUSTED_ISSUERS`.
pub fn parse(json: &str) -> Result<Vec<IssuerProfile>, ConfigError> {
    let raw: Vec<RawIssuer> = serde_json::from_str(json)
        .map_err(|e| ConfigError::new(TRUSTED_ISSUERS, format!("is not a list of issuers: {e}")))?;
    let mut profiles: Vec<IssuerProfile> = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let at = |field: &str| format!("{TRUSTED_ISSUERS}[{i}].{field}");
        let issuer_check = r.issuer.replace(TID_PLACEHOLDER, "tid");
        Issuer::parse(&issuer_check).map_err(|e| ConfigError::new(&at("issuer"), e.reason))?;
        check_url(&at("issuer"), &issuer_check)?;
        let multi_tenant = r.issuer.contains(TID_PLACEHOLDER);
        let keys = match (r.jwks_url, r.discovery_url) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    &at("jwksUrl"),
                    "and discoveryUrl are exclusive: give one",
                ))
            }
            (Some(url), None) => {
                check_url(&at("jwksUrl"), &url)?;
                KeysAt::Jwks(url)
            }
            (None, Some(url)) => {
                check_url(&at("discoveryUrl"), &url)?;
                KeysAt::Discovery(url)
            }
            (None, None) => {
                if multi_tenant {
                    return Err(ConfigError::new(
                        &at("jwksUrl"),
                        "is required for an issuer with {tid} (the keys of all its tenants: Entra ID's https://login.microsoftonline.com/common/discovery/v2.0/keys)",
                    ));
                }
                KeysAt::Discovery(default_discovery_url(&r.issuer))
            }
        };
        let audiences: Vec<String> = r
            .audiences
            .iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if audiences.is_empty() {
            return Err(ConfigError::new(
                &at("audiences"),
                "lists no audience or client id",
            ));
        }
        let algorithms = match r.algorithms {
            None => ALGORITHMS.to_vec(),
            Some(names) => names
                .iter()
                .map(|n| {
                    n.parse::<Algorithm>()
                        .ok()
                        .filter(|a| ALGORITHMS.contains(a))
                        .ok_or_else(|| {
                            ConfigError::new(
                                &at("algorithms"),
                                format!("{n:?} is not an asymmetric algorithm (RS256, ES256, ...)"),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        let subject_claim = r.subject_claim.unwrap_or_else(|| "sub".into());
        if subject_claim == "email" || subject_claim == "preferred_username" {
            return Err(ConfigError::new(
                &at("subjectClaim"),
                "must name a claim the issuer never lets a user change (sub, or Entra ID's oid), not an email or username",
            ));
        }
        let user = match r.user_id_claim {
            Some(claim) if !claim.trim().is_empty() => UserBy::Claim(claim),
            _ => UserBy::Identity,
        };
        let tenant = r
            .tenant
            .map(|t| TenantId::parse(&t).map_err(|e| ConfigError::new(&at("tenant"), e.reason)))
            .transpose()?;
        if r.sign_up == SignUp::Tenant && tenant.is_none() {
            return Err(ConfigError::new(
                &at("signUp"),
                "\"tenant\" needs the issuer bound to a tenant (`tenant`)",
            ));
        }
        if r.sign_up != SignUp::Off && user != UserBy::Identity {
            return Err(ConfigError::new(
                &at("signUp"),
                "needs identities (no userIdClaim): a signed-up user is found by their identity",
            ));
        }
        let email_domains: Vec<String> = r
            .email_domains
            .iter()
            .map(|d| d.trim().to_ascii_lowercase())
            .collect();
        // Any directory can sign a `{tid}` issuer's tokens: none of them
        // is one tenant's, nor authoritative for a domain.
        if multi_tenant && tenant.is_some() {
            return Err(ConfigError::new(
                &at("tenant"),
                "cannot bind an issuer with {tid} (every directory's tokens): list the directory's own issuer URL, bound to the tenant",
            ));
        }
        if multi_tenant && !email_domains.is_empty() {
            return Err(ConfigError::new(
                &at("emailDomains"),
                "cannot be given to an issuer with {tid}: any directory could claim the domains",
            ));
        }
        if let Some(bad) = email_domains
            .iter()
            .find(|d| d.is_empty() || !d.contains('.') || d.contains('@'))
        {
            return Err(ConfigError::new(
                &at("emailDomains"),
                format!("{bad:?} is not a domain (example.com)"),
            ));
        }
        if tenant.is_some() {
            if let Some(consumer) = email_domains
                .iter()
                .find(|d| CONSUMER_DOMAINS.contains(&d.as_str()))
            {
                return Err(ConfigError::new(
                    &at("emailDomains"),
                    format!("{consumer:?} is a consumer domain: a tenant's IdP speaks only for its organization's domains"),
                ));
            }
            if r.sign_up != SignUp::Off && email_domains.is_empty() {
                return Err(ConfigError::new(
                    &at("emailDomains"),
                    "is required to sign up through an issuer bound to a tenant: the domains its tenant speaks for",
                ));
            }
        }
        let profile = IssuerProfile {
            issuer: r.issuer,
            keys,
            audiences,
            token_use: r.token_use,
            algorithms,
            subject_claim,
            user,
            email_claim: r.email_claim.unwrap_or_else(|| "email".into()),
            email_verified_claim: r
                .email_verified_claim
                .unwrap_or_else(|| "email_verified".into()),
            tenant,
            sign_up: r.sign_up,
            email_domains,
        };
        if profiles.iter().any(|p| p.issuer == profile.issuer) {
            return Err(ConfigError::new(&at("issuer"), "is listed twice"));
        }
        profiles.push(profile);
    }
    Ok(profiles)
}

/// The single-issuer settings as a profile: tokens of either kind, the
/// user's id in `user_id_claim` (as before issuers were listed).
pub fn single(
    issuer: String,
    audiences: Vec<String>,
    jwks_url: String,
    user_id_claim: String,
) -> IssuerProfile {
    IssuerProfile {
        issuer,
        keys: KeysAt::Jwks(jwks_url),
        audiences,
        token_use: TokenUse::Any,
        algorithms: ALGORITHMS.to_vec(),
        subject_claim: "sub".into(),
        user: UserBy::Claim(user_id_claim),
        email_claim: "email".into(),
        email_verified_claim: "email_verified".into(),
        tenant: None,
        sign_up: SignUp::Off,
        email_domains: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_read_with_its_defaults() {
        let list = parse(
            r#"[
              {"issuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12", "audiences": ["app-client"]},
              {"issuer": "https://login.microsoftonline.com/{tid}/v2.0", "audiences": ["api://authz"],
               "jwksUrl": "https://login.microsoftonline.com/common/discovery/v2.0/keys",
               "subjectClaim": "oid", "tokenUse": "id", "algorithms": ["RS256"]},
              {"issuer": "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
               "audiences": ["api://authz"], "subjectClaim": "oid", "tokenUse": "any",
               "tenant": "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", "signUp": "tenant", "emailDomains": ["Contoso.com"]},
              {"issuer": "http://127.0.0.1:3001", "audiences": ["urn:authz:local"]}
            ]"#,
        )
        .unwrap();
        assert_eq!(list[0].token_use, TokenUse::Access);
        assert_eq!(list[0].user, UserBy::Identity);
        assert_eq!(
            list[0].keys,
            KeysAt::Discovery(
                "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12/.well-known/openid-configuration".into()
            )
        );
        assert_eq!(list[0].sign_up, SignUp::Off);
        assert_eq!(list[1].subject_claim, "oid");
        assert_eq!(list[1].algorithms, [Algorithm::RS256]);
        assert_eq!(list[2].email_domains, ["contoso.com"]);
        assert!(list[2].tenant.is_some());
        assert!(list[1].matches(
            "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
            Some("72f988bf-86f1-41af-91ab-2d7cd011db47")
        ));
        assert!(
            !list[1].matches("https://login.microsoftonline.com/other/v2.0", Some("72f9")),
            "the tid fills the placeholder: another tenant's issuer is not this one"
        );
        assert!(!list[1].matches("https://login.microsoftonline.com/a/b/v2.0", Some("a/b")));
    }

    #[test]
    fn a_malformed_list_names_the_entry_and_field() {
        for (json, var) in [
            ("{}", TRUSTED_ISSUERS.to_string()),
            (
                r#"[{"issuer": "cognito", "audiences": ["a"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].issuer"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": [" "]}]"#,
                format!("{TRUSTED_ISSUERS}[0].audiences"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "algorithms": ["HS256"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].algorithms"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "subjectClaim": "email"}]"#,
                format!("{TRUSTED_ISSUERS}[0].subjectClaim"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "tenant": "acme"}]"#,
                format!("{TRUSTED_ISSUERS}[0].tenant"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "signUp": "tenant"}]"#,
                format!("{TRUSTED_ISSUERS}[0].signUp"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "signUp": "open", "userIdClaim": "sub"}]"#,
                format!("{TRUSTED_ISSUERS}[0].signUp"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "jwksUrl": "ftp://k"}]"#,
                format!("{TRUSTED_ISSUERS}[0].jwksUrl"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "discoveryUrl": "k"}]"#,
                format!("{TRUSTED_ISSUERS}[0].discoveryUrl"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "jwksUrl": "https://k", "discoveryUrl": "https://d"}]"#,
                format!("{TRUSTED_ISSUERS}[0].jwksUrl"),
            ),
            (
                r#"[{"issuer": "https://login.microsoftonline.com/{tid}/v2.0", "audiences": ["a"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].jwksUrl"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"]}, {"issuer": "https://i.example.com", "audiences": ["b"]}]"#,
                format!("{TRUSTED_ISSUERS}[1].issuer"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "typo": 1}]"#,
                TRUSTED_ISSUERS.to_string(),
            ),
            // Plain HTTP only on loopback.
            (
                r#"[{"issuer": "http://idp.example.com", "audiences": ["a"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].issuer"),
            ),
            (
                r#"[{"issuer": "http://127.0.0.1.example.com", "audiences": ["a"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].issuer"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "jwksUrl": "http://keys.example.com/jwks"}]"#,
                format!("{TRUSTED_ISSUERS}[0].jwksUrl"),
            ),
            // A multi-tenant issuer is nobody's tenant, and speaks for no domain.
            (
                r#"[{"issuer": "https://login.microsoftonline.com/{tid}/v2.0", "audiences": ["a"], "jwksUrl": "https://k.example.com", "tenant": "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C"}]"#,
                format!("{TRUSTED_ISSUERS}[0].tenant"),
            ),
            (
                r#"[{"issuer": "https://login.microsoftonline.com/{tid}/v2.0", "audiences": ["a"], "jwksUrl": "https://k.example.com", "emailDomains": ["contoso.com"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].emailDomains"),
            ),
            // A tenant's IdP signs up only its own domains, never consumer ones.
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "tenant": "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", "signUp": "tenant"}]"#,
                format!("{TRUSTED_ISSUERS}[0].emailDomains"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "tenant": "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", "signUp": "tenant", "emailDomains": ["gmail.com"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].emailDomains"),
            ),
            (
                r#"[{"issuer": "https://i.example.com", "audiences": ["a"], "emailDomains": ["@corp"]}]"#,
                format!("{TRUSTED_ISSUERS}[0].emailDomains"),
            ),
        ] {
            assert_eq!(parse(json).unwrap_err().var, var, "{json}");
        }
    }
}
