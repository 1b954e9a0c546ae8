//! The scripted scenario `make demo` prints and the end-to-end test checks:
//! plain HTTP against the local gateway, with access tokens from the local
//! OpenID provider, each person signed in through its login page.
//! An admin creates a tenant, a user (with her identity at the provider
//! linked), a role and a grant; the user makes a
//! permitted call (200), a forbidden one (403), a call into another tenant
//! (403) and an unauthenticated one (401); the admin adds a permission to
//! the role and the stream makes it effective (the forbidden call turns
//! 200); the user adds an address of her own, which becomes her primary
//! once verified with the code the mailer (the admin here) is given for
//! it (self routes); she accepts an invitation to the other
//! tenant; a newcomer signs up on first sign-in and reads her own details;
//! a service's client-credentials token is refused; the audit finds
//! nothing.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use authz_core::Store;

use crate::oidc;

/// How long a role change may take to become effective before the
/// scenario fails: stream lag + the function's decision cache + the
/// gateway's result cache, with room to spare.
pub const EFFECTIVE_WITHIN: Duration = Duration::from_secs(90);

/// An HTTP client for the API's base URL (`http://127.0.0.1:PORT/STAGE`).
#[derive(Clone)]
pub struct ApiClient {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// An answer: status and JSON body (Null when empty or not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// The `Retry-After` header, when one was sent (seconds).
    pub retry_after: Option<u64>,
}

impl ApiClient {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `method path` with an optional bearer token, JSON body and
    /// `If-Match` version.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        if_match: Option<u64>,
    ) -> Result<Answer, String> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        if let Some(version) = if_match {
            request = request.header("if-match", format!("\"{version}\""));
        }
        let request = request
            .body(Full::new(Bytes::from(
                body.map(Value::to_string).unwrap_or_default(),
            )))
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(Duration::from_secs(60), self.client.request(request))
            .await
            .map_err(|_| format!("{method} {path}: no answer within 60 s"))?
            .map_err(|e| format!("{method} {path}: {e:?}"))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            retry_after,
        })
    }
}

/// One step of the scenario and how it went.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub caller: &'static str,
    pub method: &'static str,
    pub path: String,
    pub expected: u16,
    pub actual: u16,
    pub note: String,
}

impl Step {
    pub fn ok(&self) -> bool {
        self.expected == self.actual
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {:<6} {:<58} as {:<9} (expected {})",
            if self.ok() { "ok  " } else { "FAIL" },
            self.actual,
            self.method,
            self.path,
            self.caller,
            self.expected
        )?;
        if !self.note.is_empty() {
            write!(f, "  {}", self.note)?;
        }
        Ok(())
    }
}

/// What the scenario saw.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub steps: Vec<Step>,
    /// How long the role change took to become effective.
    pub role_change_effective_after: Option<Duration>,
    /// Holders the audit checked and found drifting.
    pub audited: usize,
    pub drift: usize,
}

impl Report {
    pub fn passed(&self) -> bool {
        !self.steps.is_empty()
            && self.steps.iter().all(Step::ok)
            && self.role_change_effective_after.is_some()
            && self.drift == 0
    }
}

/// Who makes a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Who {
    Admin,
    Dana,
    /// Signs in for the first time, linked to nobody.
    Erin,
    /// A backend service's client-credentials token (a machine).
    Service,
    Anonymous,
}

impl Who {
    fn name(self) -> &'static str {
        match self {
            Who::Admin => "admin",
            Who::Dana => "dana",
            Who::Erin => "erin",
            Who::Service => "service",
            Who::Anonymous => "anonymous",
        }
    }
}

/// What earlier steps kept (ids, a version, a code), by name.
type Kept = std::collections::HashMap<&'static str, String>;

/// One step of the scenario: who calls what, with what, what status it
/// expects, what it keeps from the answer and what it notes.
struct Scripted {
    who: Who,
    method: &'static str,
    /// The path, each `{name}` filled from what earlier steps kept.
    path: &'static str,
    body: Option<fn(&Kept) -> Value>,
    /// `If-Match` from the version kept under this name.
    if_match: Option<&'static str>,
    expected: u16,
    /// Asked again while it is refused (403), for up to
    /// [`EFFECTIVE_WITHIN`]: a change that takes effect through the stream
    /// and the caches.
    until_permitted: bool,
    /// What to keep from the answer's body: (name, field).
    keep: &'static [(&'static str, &'static str)],
    note: fn(&Kept, &Answer) -> String,
}

/// The scenario, in order. An admin creates two tenants, a user, a role
/// and a grant; the user makes a permitted call, a forbidden one, one into
/// the other tenant, and one without a token; the role gains a permission
/// and the forbidden call becomes permitted; the user adds and verifies an
/// address of her own and makes it primary; she accepts an invitation to
/// the other tenant. Erin, linked to nobody, is refused, signs up, and
/// reads her own details; a service's token is refused.
fn scenario() -> Vec<Scripted> {
    fn step(who: Who, method: &'static str, path: &'static str, expected: u16) -> Scripted {
        Scripted {
            who,
            method,
            path,
            body: None,
            if_match: None,
            expected,
            until_permitted: false,
            keep: &[],
            note: |_, _| String::new(),
        }
    }
    let grant: fn(&Kept) -> Value = |k| json!({"roles": [k["role"]]});
    let work_address: fn(&Kept) -> Value =
        |k| json!({"email": format!("dana.work-{}@example.com", k["suffix"])});
    let primary: fn(&Kept) -> Value = |k| json!({"emailId": k["email"]});
    vec![
        // The admin sets up a tenant, a second tenant, a user, a role, a grant.
        Scripted {
            body: Some(|k| json!({"name": format!("acme-{}", k["suffix"])})),
            keep: &[("tenant", "tenantId")],
            note: |k, _| format!("tenant {}", k["tenant"]),
            ..step(Who::Admin, "POST", "/tenants", 201)
        },
        Scripted {
            body: Some(|k| json!({"name": format!("globex-{}", k["suffix"])})),
            keep: &[("other", "tenantId")],
            note: |k, _| format!("another tenant {}", k["other"]),
            ..step(Who::Admin, "POST", "/tenants", 201)
        },
        Scripted {
            body: Some(|k| {
                json!({
                    "email": format!("dana-{}@example.com", k["suffix"]),
                    "givenName": "Dana",
                    "identities": [{"issuer": k["issuer"], "subject": format!("dana-{}", k["suffix"])}],
                })
            }),
            keep: &[("user", "userId")],
            note: |k, _| format!("user {}, her identity at the provider linked", k["user"]),
            ..step(Who::Admin, "POST", "/users", 201)
        },
        Scripted {
            body: Some(
                |k| json!({"name": format!("member-viewer-{}", k["suffix"]), "scope": "tenant", "permissions": READ_ONLY}),
            ),
            keep: &[("role", "roleId"), ("roleVersion", "version")],
            note: |k, _| format!("role {} {READ_ONLY:?}", k["role"]),
            ..step(Who::Admin, "POST", "/roles", 201)
        },
        Scripted {
            body: Some(grant),
            note: |_, _| "grant".into(),
            ..step(Who::Admin, "PUT", "/tenants/{tenant}/members/{user}", 201)
        },
        // The user: permitted, forbidden, another tenant, and no token.
        Scripted {
            note: |_, a| {
                let listed = a.body["items"].as_array().map_or(0, Vec::len);
                format!("permitted: member:read ({listed} member)")
            },
            ..step(Who::Dana, "GET", "/tenants/{tenant}/members", 200)
        },
        Scripted {
            body: Some(grant),
            note: |_, _| "forbidden: member:write not held".into(),
            ..step(Who::Dana, "PUT", "/tenants/{tenant}/members/{user}", 403)
        },
        Scripted {
            note: |_, _| "forbidden: no grant in that tenant".into(),
            ..step(Who::Dana, "GET", "/tenants/{other}/members", 403)
        },
        Scripted {
            note: |_, _| "unauthenticated".into(),
            ..step(Who::Anonymous, "GET", "/tenants/{tenant}/members", 401)
        },
        // The admin adds member:write to the role; the stream recomputes
        // the grant and the forbidden call becomes permitted.
        Scripted {
            body: Some(|_| json!({"permissions": ["tenant:read", "member:read", "member:write"]})),
            if_match: Some("roleVersion"),
            note: |_, _| "role gains member:write".into(),
            ..step(Who::Admin, "PATCH", "/roles/{role}", 200)
        },
        Scripted {
            body: Some(grant),
            until_permitted: true,
            note: |k, _| format!("permitted after {} s (stream + caches)", k["waited"]),
            ..step(Who::Dana, "PUT", "/tenants/{tenant}/members/{user}", 200)
        },
        // Dana adds a second address herself (self routes: her own user
        // id, no user:update): it cannot be primary until verified with the
        // code sent to it (here the admin stands in for the deployment's
        // mailer, which holds email:code and mails the code; Dana never
        // gets it from the API); then it is, and is her email.
        Scripted {
            body: Some(work_address),
            keep: &[("email", "emailId")],
            note: |_, _| "address added, unverified (its code is not hers to see)".into(),
            ..step(Who::Dana, "POST", "/users/{user}/emails", 201)
        },
        Scripted {
            keep: &[("code", "verificationCode")],
            note: |_, _| "the mailer's code for the address".into(),
            ..step(Who::Admin, "POST", "/users/{user}/emails/{email}/code", 201)
        },
        Scripted {
            body: Some(primary),
            note: |_, _| "refused: isVerified".into(),
            ..step(Who::Dana, "PUT", "/users/{user}/primary-email", 409)
        },
        Scripted {
            body: Some(|k| json!({"code": k["code"]})),
            note: |_, _| "verified by its code".into(),
            ..step(
                Who::Dana,
                "POST",
                "/users/{user}/emails/{email}/verify",
                200,
            )
        },
        Scripted {
            body: Some(primary),
            note: |_, a| {
                format!(
                    "primary email now {}",
                    a.body["email"].as_str().unwrap_or("?")
                )
            },
            ..step(Who::Dana, "PUT", "/users/{user}/primary-email", 200)
        },
        // The admin invites Dana's verified work address to the other
        // tenant; Dana accepts, and her details list both tenants.
        Scripted {
            body: Some(
                |k| json!({"email": format!("dana.work-{}@example.com", k["suffix"]), "roles": [k["role"]]}),
            ),
            keep: &[("invitation", "invitationId")],
            note: |k, _| format!("invitation {}", k["invitation"]),
            ..step(Who::Admin, "POST", "/tenants/{other}/invitations", 201)
        },
        Scripted {
            note: |_, _| "accepted: a grant in the other tenant".into(),
            ..step(Who::Dana, "POST", "/invitations/{invitation}/accept", 201)
        },
        Scripted {
            note: |_, a| {
                let tenants = a.body["tenants"].as_array().map_or(0, Vec::len);
                let pending = a.body["invitations"].as_array().map_or(0, Vec::len);
                format!("{tenants} tenants, {pending} pending invitations")
            },
            ..step(Who::Dana, "GET", "/users/{user}/details", 200)
        },
        // Erin signs in for the first time: her identity is linked to
        // nobody, so the one thing her token may do is sign up, which makes
        // her a user (no role, no grant) with the address the provider
        // verified; then her token is hers like anyone's.
        Scripted {
            note: |_, _| "unknown identity: only sign-up is open".into(),
            ..step(Who::Erin, "GET", "/tenants/{tenant}/members", 401)
        },
        Scripted {
            keep: &[("erin", "userId")],
            note: |k, a| {
                format!(
                    "signed up: user {}, {} verified",
                    k["erin"],
                    a.body["email"].as_str().unwrap_or("?")
                )
            },
            ..step(Who::Erin, "POST", "/users/me", 201)
        },
        Scripted {
            note: |_, a| {
                let tenants = a.body["tenants"].as_array().map_or(0, Vec::len);
                format!("who she is, at once (the gateway's cached sign-up answer covers it): {tenants} tenants")
            },
            ..step(Who::Erin, "GET", "/users/me", 200)
        },
        // A service's client-credentials token names a client, not a
        // person: refused.
        Scripted {
            note: |_, _| "a machine token: refused".into(),
            ..step(Who::Service, "GET", "/tenants/{tenant}/members", 401)
        },
    ]
}

/// The role's permissions before it gains `member:write`.
const READ_ONLY: [&str; 2] = ["tenant:read", "member:read"];

/// `template` with each `{name}` replaced by what was kept under it.
fn fill(template: &str, kept: &Kept) -> String {
    let mut path = template.to_string();
    for (name, value) in kept {
        path = path.replace(&format!("{{{name}}}"), value);
    }
    path
}

/// Runs the scenario; `print` sees each step as it completes. Errors are
/// failures to talk to the stack at all; wrong statuses are in the report.
/// The audit waits until `stream` has delivered what the steps wrote (a
/// write's follow-ups are recompute's, from the stream).
pub async fn run(
    api: &ApiClient,
    issuer: &str,
    admin_login: &str,
    store: &Store,
    stream: &crate::poller::PollerStats,
    mut print: impl FnMut(&str),
) -> Result<Report, String> {
    let mut report = Report::default();
    let mut kept = Kept::new();
    kept.insert(
        "suffix",
        ulid::Ulid::new().to_string().to_lowercase()[18..].to_string(),
    );
    kept.insert("issuer", issuer.to_string());
    let mut tokens: std::collections::HashMap<Who, Option<String>> = Default::default();
    for scripted in scenario() {
        let path = fill(scripted.path, &kept);
        let body = scripted.body.map(|b| b(&kept));
        let if_match = scripted
            .if_match
            .and_then(|name| kept.get(name)?.parse().ok());
        // Each caller signs in once, when first needed.
        let token = match tokens.entry(scripted.who) {
            std::collections::hash_map::Entry::Occupied(known) => known.get().clone(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let login = |name: &str| format!("{name}-{}", kept["suffix"]);
                let token = match scripted.who {
                    Who::Admin => Some(oidc::sign_in(issuer, admin_login).await?),
                    Who::Dana => Some(oidc::sign_in(issuer, &login("dana")).await?),
                    Who::Erin => Some(oidc::sign_in(issuer, &login("erin")).await?),
                    Who::Service => Some(oidc::client_credentials(issuer).await?),
                    Who::Anonymous => None,
                };
                slot.insert(token).clone()
            }
        };
        let started = Instant::now();
        let answer = loop {
            let answer = api
                .call(
                    scripted.method,
                    &path,
                    token.as_deref(),
                    body.as_ref(),
                    if_match,
                )
                .await?;
            if !scripted.until_permitted
                || answer.status != 403
                || started.elapsed() > EFFECTIVE_WITHIN
            {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        if scripted.until_permitted {
            let waited = started.elapsed();
            kept.insert("waited", format!("{:.1}", waited.as_secs_f64()));
            if answer.status == 200 {
                report.role_change_effective_after = Some(waited);
            }
        }
        for (name, field) in scripted.keep {
            let value = match &answer.body[field] {
                Value::String(s) => s.clone(),
                Value::Null => "?".to_string(),
                other => other.to_string(),
            };
            kept.insert(name, value);
        }
        let note = (scripted.note)(&kept, &answer);
        let step = Step {
            caller: scripted.who.name(),
            method: scripted.method,
            path,
            expected: scripted.expected,
            actual: answer.status,
            note: if answer.status == scripted.expected {
                note
            } else {
                format!("{note} body: {}", answer.body)
            },
        };
        print(&step.to_string());
        report.steps.push(step);
    }

    // Once the stream has delivered every step's records: every grant and
    // user agrees with its roles, every guard and address with its owner.
    if !stream.drained(std::time::Duration::from_secs(60)).await {
        return Err("audit: the stream was still busy after 60 s".into());
    }
    let audit = recompute::audit::run(store, false)
        .await
        .map_err(|e| format!("audit: {e}"))?;
    report.audited = audit.checked;
    report.drift = audit.drifted.len() + audit.findings.len();
    print(&format!(
        "{} audit: {} holders checked, {} drift or findings",
        if report.drift == 0 { "ok  " } else { "FAIL" },
        report.audited,
        report.drift
    ));
    for drift in &audit.drifted {
        print(&format!(
            "     drift: {:?} holds {:?}, its roles give {:?}",
            drift.holder, drift.stored, drift.expected
        ));
    }
    for finding in &audit.findings {
        print(&format!(
            "     finding: {:?} {} {:?} (owner {:?})",
            finding.problem, finding.item_type, finding.key, finding.owner
        ));
    }
    Ok(report)
}
