//! Revocation latency through the local stack, as a target feels it: a
//! member signed in at the OpenID provider reads their tenant until every
//! cache holds the Allow (the gateway's result cache and the authorizer's
//! decision cache), an admin takes the access away, and the time from the
//! admin's 2xx to the member's first refused request is measured. The
//! end-to-end test bounds it; `make bench` reports its median and worst.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::scenario::{Answer, ApiClient};

/// Longest wait for a refusal before the measurement fails.
const GIVE_UP: Duration = Duration::from_secs(30);

/// Time between the member's requests while waiting for the refusal.
const POLL: Duration = Duration::from_millis(50);

/// One way of taking access away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// `PATCH /users/{u} {"status": "suspended"}`
    Suspend,
    /// `DELETE /users/{u}`
    DeleteUser,
    /// `DELETE /tenants/{t}`
    DeleteTenant,
    /// `DELETE /tenants/{t}/members/{u}`
    RemoveGrant,
    /// `PUT /tenants/{t}/members/{u}` without the role the read needs.
    NarrowGrant,
    /// `PATCH /users/{u} {"roles": []}` when the access came from a global
    /// role.
    EndGlobalRole,
    /// `DELETE /users/{u}/identities/{id}` of the identity the token names.
    Unlink,
}

impl Revocation {
    pub const ALL: [Revocation; 7] = [
        Revocation::Suspend,
        Revocation::DeleteUser,
        Revocation::DeleteTenant,
        Revocation::RemoveGrant,
        Revocation::NarrowGrant,
        Revocation::EndGlobalRole,
        Revocation::Unlink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Revocation::Suspend => "suspend the user",
            Revocation::DeleteUser => "delete the user",
            Revocation::DeleteTenant => "delete the tenant",
            Revocation::RemoveGrant => "remove the grant",
            Revocation::NarrowGrant => "remove the grant's role",
            Revocation::EndGlobalRole => "end the global role",
            Revocation::Unlink => "unlink the identity",
        }
    }
}

/// The admin's side of one measurement.
pub struct Admin<'a> {
    pub api: &'a ApiClient,
    pub token: &'a str,
    /// The OpenID provider the member signs in at.
    pub issuer: &'a str,
}

impl Admin<'_> {
    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        version: Option<u64>,
    ) -> Result<Answer, String> {
        self.api
            .call(method, path, Some(self.token), body.as_ref(), version)
            .await
    }

    async fn expect(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        version: Option<u64>,
    ) -> Result<Value, String> {
        let answer = self.call(method, path, body, version).await?;
        if (200..300).contains(&answer.status) {
            Ok(answer.body)
        } else {
            Err(format!(
                "{method} {path}: {} {}",
                answer.status, answer.body
            ))
        }
    }

    async fn create(&self, path: &str, body: Value, id: &str) -> Result<String, String> {
        let created = self.expect("POST", path, Some(body), None).await?;
        created[id]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("POST {path}: no {id} in {created}"))
    }
}

/// The time from the admin's 2xx for `how` to the member's first refused
/// request, every cache holding the member's Allow when the admin acts.
pub async fn measure(admin: &Admin<'_>, how: Revocation) -> Result<Duration, String> {
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let tenant = admin
        .create(
            "/tenants",
            json!({"name": format!("rev-{tag}")}),
            "tenantId",
        )
        .await?;
    let reader = admin
        .create(
            "/roles",
            json!({"name": format!("reader-{tag}"), "scope": "tenant", "permissions": ["tenant:read"]}),
            "roleId",
        )
        .await?;
    let subject = format!("member-{tag}");
    let mut user = json!({
        "email": format!("{subject}@example.com"),
        "identities": [{"issuer": admin.issuer, "subject": subject}],
    });
    if how == Revocation::EndGlobalRole {
        let everywhere = admin
            .create(
                "/roles",
                json!({"name": format!("reader-{tag}"), "scope": "global", "permissions": ["tenant:read"]}),
                "roleId",
            )
            .await?;
        user["roles"] = json!([everywhere]);
    }
    let user = admin.create("/users", user, "userId").await?;
    let member = format!("/tenants/{tenant}/members/{user}");
    if how != Revocation::EndGlobalRole {
        admin
            .expect("PUT", &member, Some(json!({"roles": [reader]})), None)
            .await?;
    }

    let token = crate::oidc::sign_in(admin.issuer, &subject).await?;
    let read = format!("/tenants/{tenant}");
    let reads = || admin.api.call("GET", &read, Some(&token), None, None);
    // Twice: the first fills the caches, the second is answered from them.
    for _ in 0..2 {
        let answer = reads().await?;
        if answer.status != 200 {
            return Err(format!(
                "the member's read before: {} {}",
                answer.status, answer.body
            ));
        }
    }

    let user_path = format!("/users/{user}");
    let reason = Some(json!({"reason": "revocation latency"}));
    match how {
        Revocation::Suspend => {
            admin
                .expect(
                    "PATCH",
                    &user_path,
                    Some(json!({"status": "suspended"})),
                    None,
                )
                .await?
        }
        Revocation::DeleteUser => admin.expect("DELETE", &user_path, reason, None).await?,
        Revocation::DeleteTenant => admin.expect("DELETE", &read, reason, None).await?,
        Revocation::RemoveGrant => admin.expect("DELETE", &member, None, None).await?,
        Revocation::NarrowGrant => {
            admin
                .expect("PUT", &member, Some(json!({"roles": []})), None)
                .await?
        }
        Revocation::EndGlobalRole => {
            admin
                .expect("PATCH", &user_path, Some(json!({"roles": []})), None)
                .await?
        }
        Revocation::Unlink => {
            let linked = admin
                .expect("GET", &format!("{user_path}/identities"), None, None)
                .await?;
            let id = linked["items"][0]["identityId"]
                .as_str()
                .ok_or_else(|| format!("no identity in {linked}"))?
                .to_string();
            admin
                .expect(
                    "DELETE",
                    &format!("{user_path}/identities/{id}"),
                    None,
                    None,
                )
                .await?
        }
    };
    let revoked = Instant::now();
    loop {
        let answer = reads().await?;
        match answer.status {
            // Through the gateway: the backend answered (a deleted tenant
            // is a 404 there, but the request was still let through).
            200 | 404 if revoked.elapsed() < GIVE_UP => tokio::time::sleep(POLL).await,
            200 | 404 => {
                return Err(format!(
                    "{}: still let through after {GIVE_UP:?}",
                    how.name()
                ))
            }
            401 | 403 => return Ok(revoked.elapsed()),
            other => {
                return Err(format!(
                    "{}: the member's read answered {other} {}",
                    how.name(),
                    answer.body
                ))
            }
        }
    }
}
