//! The scripted scenario `make demo` prints and the end-to-end test checks:
//! plain HTTP against the local gateway, with tokens from the local issuer.
//! An admin creates a tenant, a user, a role and a grant; the user makes a
//! permitted call (200), a forbidden one (403), a call into another tenant
//! (403) and an unauthenticated one (401); the admin adds a permission to
//! the role and the stream makes it effective (the forbidden call turns
//! 200); the user adds an address of her own, which becomes her primary
//! once verified with the code the mailer (the admin here) is given for
//! it (self routes); she accepts an invitation to the other
//! tenant; the audit finds nothing.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use authz_core::Store;

use crate::issuer::LocalIssuer;

/// How long a role change may take to become effective before the
/// scenario fails: stream lag + the function's decision cache + the
/// gateway's result cache, with room to spare.
pub const EFFECTIVE_WITHIN: Duration = Duration::from_secs(90);
const TOKEN_TTL: Duration = Duration::from_secs(3600);

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
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
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

/// Runs the scenario; `print` sees each step as it completes. Errors are
/// failures to talk to the stack at all; wrong statuses are in the report.
pub async fn run(
    api: &ApiClient,
    issuer: &LocalIssuer,
    admin_user_id: &str,
    store: &Store,
    mut print: impl FnMut(&str),
) -> Result<Report, String> {
    let mut report = Report::default();
    let suffix = ulid::Ulid::new().to_string().to_lowercase()[18..].to_string();
    let admin = issuer.token(admin_user_id, TOKEN_TTL);

    let mut step = |report: &mut Report,
                    caller: &'static str,
                    method: &'static str,
                    path: &str,
                    expected: u16,
                    answer: &Answer,
                    note: String| {
        let step = Step {
            caller,
            method,
            path: path.to_string(),
            expected,
            actual: answer.status,
            note: if answer.status == expected {
                note
            } else {
                format!("{note} body: {}", answer.body)
            },
        };
        print(&step.to_string());
        report.steps.push(step);
    };
    let id = |answer: &Answer, field: &str| answer.body[field].as_str().unwrap_or("?").to_string();

    // The admin sets up a tenant, a second tenant, a user, a role, a grant.
    let body = json!({"name": format!("acme-{suffix}")});
    let a = api
        .call("POST", "/tenants", Some(&admin), Some(&body), None)
        .await?;
    let tenant = id(&a, "tenantId");
    step(
        &mut report,
        "admin",
        "POST",
        "/tenants",
        201,
        &a,
        format!("tenant {tenant}"),
    );

    let body = json!({"name": format!("globex-{suffix}")});
    let a = api
        .call("POST", "/tenants", Some(&admin), Some(&body), None)
        .await?;
    let other_tenant = id(&a, "tenantId");
    step(
        &mut report,
        "admin",
        "POST",
        "/tenants",
        201,
        &a,
        format!("another tenant {other_tenant}"),
    );

    let body = json!({"email": format!("dana-{suffix}@example.com"), "givenName": "Dana"});
    let a = api
        .call("POST", "/users", Some(&admin), Some(&body), None)
        .await?;
    let user = id(&a, "userId");
    step(
        &mut report,
        "admin",
        "POST",
        "/users",
        201,
        &a,
        format!("user {user}"),
    );

    let read_only = ["tenant:read", "member:read"];
    let body = json!({"name": format!("member-viewer-{suffix}"), "scope": "tenant", "permissions": read_only});
    let a = api
        .call("POST", "/roles", Some(&admin), Some(&body), None)
        .await?;
    let role = id(&a, "roleId");
    let role_version = a.body["version"].as_u64().unwrap_or(0);
    step(
        &mut report,
        "admin",
        "POST",
        "/roles",
        201,
        &a,
        format!("role {role} {read_only:?}"),
    );

    let grant_path = format!("/tenants/{tenant}/members/{user}");
    let grant = json!({"roles": [role]});
    let a = api
        .call("PUT", &grant_path, Some(&admin), Some(&grant), None)
        .await?;
    step(
        &mut report,
        "admin",
        "PUT",
        &grant_path,
        201,
        &a,
        "grant".into(),
    );

    // The user: permitted, forbidden, another tenant, and no token.
    let dana = issuer.token(&user, TOKEN_TTL);
    let members = format!("/tenants/{tenant}/members");
    let a = api.call("GET", &members, Some(&dana), None, None).await?;
    let listed = a.body["items"].as_array().map_or(0, Vec::len);
    step(
        &mut report,
        "dana",
        "GET",
        &members,
        200,
        &a,
        format!("permitted: member:read ({listed} member)"),
    );

    let a = api
        .call("PUT", &grant_path, Some(&dana), Some(&grant), None)
        .await?;
    step(
        &mut report,
        "dana",
        "PUT",
        &grant_path,
        403,
        &a,
        "forbidden: member:write not granted".into(),
    );

    let other_members = format!("/tenants/{other_tenant}/members");
    let a = api
        .call("GET", &other_members, Some(&dana), None, None)
        .await?;
    step(
        &mut report,
        "dana",
        "GET",
        &other_members,
        403,
        &a,
        "forbidden: no grant in that tenant".into(),
    );

    let a = api.call("GET", &members, None, None, None).await?;
    step(
        &mut report,
        "anonymous",
        "GET",
        &members,
        401,
        &a,
        "unauthenticated".into(),
    );

    // The admin adds member:write to the role; the stream recomputes the
    // grant and the forbidden call becomes permitted.
    let role_path = format!("/roles/{role}");
    let body = json!({"permissions": ["tenant:read", "member:read", "member:write"]});
    let a = api
        .call(
            "PATCH",
            &role_path,
            Some(&admin),
            Some(&body),
            Some(role_version),
        )
        .await?;
    step(
        &mut report,
        "admin",
        "PATCH",
        &role_path,
        200,
        &a,
        "role gains member:write".into(),
    );

    let started = Instant::now();
    let a = loop {
        let a = api
            .call("PUT", &grant_path, Some(&dana), Some(&grant), None)
            .await?;
        if a.status != 403 || started.elapsed() > EFFECTIVE_WITHIN {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let waited = started.elapsed();
    if a.status == 200 {
        report.role_change_effective_after = Some(waited);
    }
    step(
        &mut report,
        "dana",
        "PUT",
        &grant_path,
        200,
        &a,
        format!(
            "permitted after {:.1} s (stream + caches)",
            waited.as_secs_f64()
        ),
    );

    // Dana adds a second address herself (self routes: her own user id, no
    // user:update): it cannot be primary until verified with the code sent
    // to it (here the admin stands in for the deployment's mailer, which
    // holds email:code and mails the code; Dana never gets it from the
    // API); then it is, and is her email.
    let emails_path = format!("/users/{user}/emails");
    let body = json!({"email": format!("dana.work-{suffix}@example.com")});
    let a = api
        .call("POST", &emails_path, Some(&dana), Some(&body), None)
        .await?;
    let email_id = id(&a, "emailId");
    step(
        &mut report,
        "dana",
        "POST",
        &emails_path,
        201,
        &a,
        "address added, unverified (its code is not hers to see)".into(),
    );
    let code_path = format!("/users/{user}/emails/{email_id}/code");
    let a = api
        .call("POST", &code_path, Some(&admin), None, None)
        .await?;
    let code = id(&a, "verificationCode");
    step(
        &mut report,
        "admin",
        "POST",
        &code_path,
        201,
        &a,
        "the mailer's code for the address".into(),
    );
    let primary_path = format!("/users/{user}/primary-email");
    let body = json!({"emailId": email_id});
    let a = api
        .call("PUT", &primary_path, Some(&dana), Some(&body), None)
        .await?;
    step(
        &mut report,
        "dana",
        "PUT",
        &primary_path,
        409,
        &a,
        "refused: isVerified".into(),
    );
    let verify_path = format!("/users/{user}/emails/{email_id}/verify");
    let a = api
        .call(
            "POST",
            &verify_path,
            Some(&dana),
            Some(&json!({"code": code})),
            None,
        )
        .await?;
    step(
        &mut report,
        "dana",
        "POST",
        &verify_path,
        200,
        &a,
        "verified by its code".into(),
    );
    let a = api
        .call("PUT", &primary_path, Some(&dana), Some(&body), None)
        .await?;
    step(
        &mut report,
        "dana",
        "PUT",
        &primary_path,
        200,
        &a,
        format!(
            "primary email now {}",
            a.body["email"].as_str().unwrap_or("?")
        ),
    );

    // The admin invites Dana's verified work address to the other tenant;
    // Dana accepts, and her details list both tenants.
    let invitations_path = format!("/tenants/{other_tenant}/invitations");
    let body = json!({"email": format!("dana.work-{suffix}@example.com"), "roles": [role]});
    let a = api
        .call("POST", &invitations_path, Some(&admin), Some(&body), None)
        .await?;
    let invitation = id(&a, "invitationId");
    step(
        &mut report,
        "admin",
        "POST",
        &invitations_path,
        201,
        &a,
        format!("invitation {invitation}"),
    );
    let accept_path = format!("/invitations/{invitation}/accept");
    let a = api
        .call("POST", &accept_path, Some(&dana), None, None)
        .await?;
    step(
        &mut report,
        "dana",
        "POST",
        &accept_path,
        201,
        &a,
        "accepted: a grant in the other tenant".into(),
    );
    let details_path = format!("/users/{user}/details");
    let a = api
        .call("GET", &details_path, Some(&dana), None, None)
        .await?;
    let tenants = a.body["tenants"].as_array().map_or(0, Vec::len);
    let pending = a.body["invitations"].as_array().map_or(0, Vec::len);
    step(
        &mut report,
        "dana",
        "GET",
        &details_path,
        200,
        &a,
        format!("{tenants} tenants, {pending} pending invitations"),
    );

    // Every grant and user agrees with its roles, every guard and address
    // with its owner.
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
    Ok(report)
}
