//! Revocation latency through the local stack, as a target feels it: a
//! member signed in at the OpenID provider reads their tenant, on the authz
//! API or on the example tickets API behind the same authorizer, until
//! every cache holds the Allow (that API's gateway result cache and the
//! authorizer's decision cache), an admin takes the access away, and the
//! time from the admin's 2xx (or the end their write set) to the member's
//! first refused request is measured. The end-to-end test bounds it; `make bench` reports its
//! median and worst.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::scenario::{Answer, ApiClient};

/// Longest wait for a refusal before the measurement fails.
const GIVE_UP: Duration = Duration::from_secs(30);

/// Time between the member's requests while waiting for the refusal.
const POLL: Duration = Duration::from_millis(50);

/// How far ahead a grant is ended sooner (seconds): past the write's own
/// flush, so that every cache holds the Allow again at the end.
const GRANT_ENDS_IN: u64 = 5;

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
    /// `DELETE /roles/{r}` of the role the grant gives.
    DeleteRole,
    /// `PATCH /roles/{r}` without the permission the read needs.
    NarrowRole,
    /// The tenant's directory deactivates the member over SCIM, as Entra
    /// ID does by default (`Replace active "False"`).
    DirectoryDeactivate,
    /// The tenant's directory deletes the member over SCIM.
    DirectoryDelete,
    /// `PUT /tenants/{t}/members/{u}` ending the grant a few seconds from
    /// now: measured from that end, not from the 2xx.
    EndGrantSooner,
    /// `PATCH /users/{u} {"status": "deleted"}`: a soft delete.
    SoftDelete,
    /// The tenant's directory takes the member out of the group whose
    /// mapped role gave the read (their grant holds nothing else).
    DirectoryGroupLeave,
}

impl Revocation {
    pub const ALL: [Revocation; 14] = [
        Revocation::Suspend,
        Revocation::DeleteUser,
        Revocation::DeleteTenant,
        Revocation::RemoveGrant,
        Revocation::NarrowGrant,
        Revocation::EndGlobalRole,
        Revocation::Unlink,
        Revocation::DeleteRole,
        Revocation::NarrowRole,
        Revocation::DirectoryDeactivate,
        Revocation::DirectoryDelete,
        Revocation::EndGrantSooner,
        Revocation::SoftDelete,
        Revocation::DirectoryGroupLeave,
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
            Revocation::DeleteRole => "delete the role",
            Revocation::NarrowRole => "take the permission from the role",
            Revocation::DirectoryDeactivate => "deactivate over SCIM",
            Revocation::DirectoryDelete => "delete over SCIM",
            Revocation::EndGrantSooner => "end the grant sooner",
            Revocation::SoftDelete => "soft-delete the user",
            Revocation::DirectoryGroupLeave => "leave a group over SCIM",
        }
    }
}

/// Where the member reads their tenant.
#[derive(Clone, Copy)]
pub enum Through<'a> {
    /// The authz API: `GET /tenants/{t}` (`tenant:read`).
    Authz,
    /// Another API behind the same authorizer, the example's:
    /// `GET /tenants/{t}/tickets` (`ticket:read`).
    Tickets(&'a ApiClient),
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
/// request `through` an API, every cache holding the member's Allow when
/// the admin acts.
pub async fn measure(
    admin: &Admin<'_>,
    how: Revocation,
    through: Through<'_>,
) -> Result<Duration, String> {
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
            json!({"name": format!("reader-{tag}"), "scope": "tenant", "permissions": ["tenant:read", "ticket:read"]}),
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
                json!({"name": format!("reader-{tag}"), "scope": "global", "permissions": ["tenant:read", "ticket:read"]}),
                "roleId",
            )
            .await?;
        user["roles"] = json!([everywhere]);
    }
    let user = admin.create("/users", user, "userId").await?;
    let member = format!("/tenants/{tenant}/members/{user}");
    if how != Revocation::EndGlobalRole {
        // A group's member holds the role through the group only.
        let roles = match how {
            Revocation::DirectoryGroupLeave => json!([]),
            _ => json!([reader]),
        };
        admin
            .expect("PUT", &member, Some(json!({ "roles": roles })), None)
            .await?;
    }

    // For the directory's revocations: the member's address vouched for,
    // a token of the tenant's directory, and the member provisioned by it.
    let directory = match how {
        Revocation::DirectoryDeactivate
        | Revocation::DirectoryDelete
        | Revocation::DirectoryGroupLeave => {
            Some(provision(admin, &tenant, &user, &format!("{subject}@example.com")).await?)
        }
        _ => None,
    };
    // For a group's: the person in a group the admin maps to the role.
    let group = match (how, &directory) {
        (Revocation::DirectoryGroupLeave, Some((secret, person))) => {
            Some(mapped_group(admin, &tenant, secret, person, &reader).await?)
        }
        _ => None,
    };

    let token = crate::oidc::sign_in(admin.issuer, &subject).await?;
    let read = format!("/tenants/{tenant}");
    let (api, read_path) = match through {
        Through::Authz => (admin.api, read.clone()),
        Through::Tickets(api) => (api, format!("/tenants/{tenant}/tickets")),
    };
    let reads = || api.call("GET", &read_path, Some(&token), None, None);
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
    // When the access ends: at the admin's 2xx, or at the end a write set.
    let mut ends_at = None;
    match how {
        Revocation::Suspend | Revocation::SoftDelete => {
            let status = match how {
                Revocation::Suspend => "suspended",
                _ => "deleted",
            };
            admin
                .expect("PATCH", &user_path, Some(json!({ "status": status })), None)
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
        Revocation::EndGrantSooner => {
            // A few seconds on: the caches are filled again meanwhile
            // (the write's own flush comes before the end).
            let end = authz_core::clock::now_seconds() + GRANT_ENDS_IN;
            ends_at = Some(std::time::UNIX_EPOCH + Duration::from_secs(end));
            let body = json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(end)});
            admin.expect("PUT", &member, Some(body), None).await?
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
        Revocation::DeleteRole => {
            admin
                .expect("DELETE", &format!("/roles/{reader}"), reason, None)
                .await?
        }
        Revocation::NarrowRole => {
            admin
                .expect(
                    "PATCH",
                    &format!("/roles/{reader}"),
                    Some(json!({"permissions": ["member:read"]})),
                    Some(1),
                )
                .await?
        }
        Revocation::DirectoryDeactivate
        | Revocation::DirectoryDelete
        | Revocation::DirectoryGroupLeave => {
            let (secret, person) = directory.as_ref().expect("provisioned above");
            let (method, path, body) = match how {
                Revocation::DirectoryDeactivate => (
                    "PATCH",
                    format!("/scim/v2/{tenant}/Users/{person}"),
                    Some(json!({
                        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                        "Operations": [{"op": "Replace", "path": "active", "value": "False"}]
                    })),
                ),
                // As Okta removes a member from a group it pushes.
                Revocation::DirectoryGroupLeave => (
                    "PATCH",
                    format!(
                        "/scim/v2/{tenant}/Groups/{}",
                        group.as_ref().expect("made above")
                    ),
                    Some(json!({
                        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                        "Operations": [{"op": "remove", "path": format!("members[value eq \"{person}\"]")}]
                    })),
                ),
                _ => ("DELETE", format!("/scim/v2/{tenant}/Users/{person}"), None),
            };
            let answer = admin
                .api
                .call(method, &path, Some(secret), body.as_ref(), None)
                .await?;
            if !(200..300).contains(&answer.status) {
                return Err(format!(
                    "{method} {path}: {} {}",
                    answer.status, answer.body
                ));
            }
            answer.body
        }
    };
    let revoked = match ends_at {
        Some(end) => {
            let left = end
                .duration_since(authz_core::clock::system_now())
                .unwrap_or_default();
            Instant::now() + left
        }
        None => Instant::now(),
    };
    loop {
        let answer = reads().await?;
        let now = Instant::now();
        if now < revoked {
            // Before the end the grant set: still let through.
            if answer.status != 200 {
                return Err(format!(
                    "{}: refused before the end ({} {})",
                    how.name(),
                    answer.status,
                    answer.body
                ));
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
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

/// A tenant directory's token through the gateway: let through on its
/// tenant's SCIM base (twice: the second answered from the caches),
/// refused on another tenant's, off the SCIM routes and on the other APIs
/// behind the same authorizer (`others`: the example's tickets), and a
/// user's token refused on the SCIM base; then revoked, and the time from
/// the admin's 2xx to its first refusal.
pub async fn directory_token(admin: &Admin<'_>, others: &[&ApiClient]) -> Result<Duration, String> {
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let mut tenants = Vec::new();
    for name in ["scim", "scim-other"] {
        tenants.push(
            admin
                .create(
                    "/tenants",
                    json!({"name": format!("{name}-{tag}")}),
                    "tenantId",
                )
                .await?,
        );
    }
    let (own, other) = (&tenants[0], &tenants[1]);
    let created = admin
        .expect(
            "POST",
            &format!("/tenants/{own}/scim-tokens"),
            Some(json!({"name": "gateway"})),
            None,
        )
        .await?;
    let secret = created["token"].as_str().unwrap_or_default().to_string();
    let token_id = created["tokenId"].as_str().unwrap_or_default().to_string();
    let status = |path: String, token: String| async move {
        admin
            .api
            .call("GET", &path, Some(&token), None, None)
            .await
            .map(|a| a.status)
    };
    let users = format!("/scim/v2/{own}/Users");
    for _ in 0..2 {
        let got = status(users.clone(), secret.clone()).await?;
        if got != 200 {
            return Err(format!("GET {users} with its token: {got}"));
        }
    }
    for path in [
        format!("/scim/v2/{other}/Users"),
        format!("/tenants/{own}"),
        format!("/tenants/{own}/members"),
    ] {
        let got = status(path.clone(), secret.clone()).await?;
        if !matches!(got, 401 | 403) {
            return Err(format!("GET {path} with {own}'s SCIM token: {got}"));
        }
    }
    for api in others {
        let path = format!("/tenants/{own}/tickets");
        let got = api
            .call("GET", &path, Some(&secret), None, None)
            .await?
            .status;
        if !matches!(got, 401 | 403) {
            return Err(format!(
                "GET {path} on another API with {own}'s SCIM token: {got}"
            ));
        }
    }
    // The gateway's refusal on another tenant's base, as the directory
    // reads it: a SCIM error body (RFC 7644 §3.12).
    let other_base = format!("/scim/v2/{other}/Users");
    let refused = admin
        .api
        .call("GET", &other_base, Some(&secret), None, None)
        .await?;
    let scim = refused.body["schemas"] == json!(["urn:ietf:params:scim:api:messages:2.0:Error"])
        && refused.body["status"] == json!(refused.status.to_string())
        && refused.body["detail"].is_string();
    if !scim {
        return Err(format!(
            "GET {other_base} with {own}'s SCIM token: not a SCIM error ({})",
            refused.body
        ));
    }
    let got = status(users.clone(), admin.token.to_string()).await?;
    if got != 403 {
        return Err(format!("GET {users} with a user's token: {got}"));
    }
    admin
        .expect(
            "DELETE",
            &format!("/tenants/{own}/scim-tokens/{token_id}"),
            None,
            None,
        )
        .await?;
    let revoked = Instant::now();
    loop {
        match status(users.clone(), secret.clone()).await? {
            200 if revoked.elapsed() < GIVE_UP => tokio::time::sleep(POLL).await,
            200 => return Err(format!("a revoked token let through after {GIVE_UP:?}")),
            401 | 403 => return Ok(revoked.elapsed()),
            other => return Err(format!("GET {users} with a revoked token: {other}")),
        }
    }
}

/// Makes `user` (a member of `tenant` whose address is `email`) a person
/// of the tenant's directory: the address vouched for, a directory token
/// created, the person provisioned over SCIM. The token and the person's
/// SCIM id.
async fn provision(
    admin: &Admin<'_>,
    tenant: &str,
    user: &str,
    email: &str,
) -> Result<(String, String), String> {
    let addresses = admin
        .expect("GET", &format!("/users/{user}/emails"), None, None)
        .await?;
    let email_id = addresses["items"][0]["emailId"]
        .as_str()
        .ok_or_else(|| format!("no address in {addresses}"))?
        .to_string();
    admin
        .expect(
            "POST",
            &format!("/users/{user}/emails/{email_id}/verify"),
            Some(json!({"verified": true})),
            None,
        )
        .await?;
    let created = admin
        .expect(
            "POST",
            &format!("/tenants/{tenant}/scim-tokens"),
            Some(json!({"name": "revocation latency"})),
            None,
        )
        .await?;
    let secret = created["token"]
        .as_str()
        .ok_or_else(|| format!("no secret in {created}"))?
        .to_string();
    let path = format!("/scim/v2/{tenant}/Users");
    let person = admin
        .api
        .call(
            "POST",
            &path,
            Some(&secret),
            Some(&json!({"userName": email})),
            None,
        )
        .await?;
    if person.status != 201 {
        return Err(format!("POST {path}: {} {}", person.status, person.body));
    }
    let id = person.body["id"]
        .as_str()
        .ok_or_else(|| format!("no id in {}", person.body))?
        .to_string();
    Ok((secret, id))
}

/// A group of `tenant`'s directory holding `person`, made with the
/// directory's `secret` and mapped by the admin to `role`: its id.
async fn mapped_group(
    admin: &Admin<'_>,
    tenant: &str,
    secret: &str,
    person: &str,
    role: &str,
) -> Result<String, String> {
    let path = format!("/scim/v2/{tenant}/Groups");
    let created = admin
        .api
        .call(
            "POST",
            &path,
            Some(secret),
            Some(&json!({"displayName": "Readers", "members": [{"value": person}]})),
            None,
        )
        .await?;
    if created.status != 201 {
        return Err(format!("POST {path}: {} {}", created.status, created.body));
    }
    let id = created.body["id"]
        .as_str()
        .ok_or_else(|| format!("no id in {}", created.body))?
        .to_string();
    admin
        .expect(
            "PUT",
            &format!("/tenants/{tenant}/scim-groups/{id}/roles"),
            Some(json!({ "roles": [role] })),
            None,
        )
        .await?;
    Ok(id)
}

/// What a tenant admin's storm of revoking writes did to everyone else.
#[derive(Debug, Clone)]
pub struct Storm {
    /// How long the admin looped.
    pub lasted: Duration,
    /// Revoking writes the API accepted, and refused with 429 (each with
    /// its `Retry-After`).
    pub accepted: usize,
    pub limited: usize,
    /// Flushes of the authz API's gateway cache meanwhile.
    pub flushes: usize,
    /// Another tenant's member's requests meanwhile, all answered 200, and
    /// the authorizer's reads of callers' standing (uncached decisions,
    /// `BatchGetItem`) meanwhile, anyone's.
    pub bystander_requests: usize,
    pub standing_reads: u64,
    /// The gateway's calls of the authorizer for that member's requests
    /// (its cache misses: after a flush, the next request misses once).
    pub bystander_authorizer_calls: usize,
    /// A member of the other tenant suspended mid-storm: refused after.
    pub suspended_refused_after: Duration,
}

/// A storm: a tenant admin (holding `member:write` in their tenant only)
/// ends a member's grant one second sooner on every request, as fast as
/// the API lets them, for `lasted`; meanwhile a member of another tenant
/// reads their tenant every 100 ms, and half-way through the platform
/// admin suspends another member of that tenant, whose refusal is timed.
/// `flushes`, `standing_reads` and `authorizer_calls_with` (the gateway's
/// calls of the authorizer for a token) read the stack's counters.
pub async fn storm(
    admin: &Admin<'_>,
    lasted: Duration,
    flushes: impl Fn() -> usize,
    standing_reads: impl Fn() -> u64,
    authorizer_calls_with: impl Fn(&str) -> usize,
) -> Result<Storm, String> {
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let noisy = admin
        .create(
            "/tenants",
            json!({"name": format!("noisy-{tag}")}),
            "tenantId",
        )
        .await?;
    let quiet = admin
        .create(
            "/tenants",
            json!({"name": format!("quiet-{tag}")}),
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
    let manager = admin
        .create(
            "/roles",
            json!({"name": format!("manager-{tag}"), "scope": "tenant",
                   "permissions": ["tenant:read", "member:read", "member:write"]}),
            "roleId",
        )
        .await?;
    let person = |name: &str| {
        json!({"email": format!("{name}-{tag}@example.com"),
               "identities": [{"issuer": admin.issuer, "subject": format!("{name}-{tag}")}]})
    };
    let mallory = admin.create("/users", person("mallory"), "userId").await?;
    let victim = admin.create("/users", person("victim"), "userId").await?;
    let bea = admin.create("/users", person("bea"), "userId").await?;
    let ben = admin.create("/users", person("ben"), "userId").await?;
    for (tenant, user, role) in [
        (&noisy, &mallory, &manager),
        (&noisy, &victim, &reader),
        (&quiet, &bea, &reader),
        (&quiet, &ben, &reader),
    ] {
        admin
            .expect(
                "PUT",
                &format!("/tenants/{tenant}/members/{user}"),
                Some(json!({"roles": [role]})),
                None,
            )
            .await?;
    }
    let mut tokens = Vec::new();
    for name in ["mallory", "bea", "ben"] {
        tokens.push(crate::oidc::sign_in(admin.issuer, &format!("{name}-{tag}")).await?);
    }
    let [mallory_token, bea_token, ben_token] = <[String; 3]>::try_from(tokens).expect("three");
    let read = format!("/tenants/{quiet}");
    for t in [&bea_token, &ben_token] {
        for _ in 0..2 {
            let answer = admin.api.call("GET", &read, Some(t), None, None).await?;
            if answer.status != 200 {
                return Err(format!("a quiet member's read before: {}", answer.status));
            }
        }
    }

    let flushes_before = flushes();
    let reads_before = standing_reads();
    let bystander_calls_before = authorizer_calls_with(&bea_token);
    let started = Instant::now();
    let end = started + lasted;
    let victim_member = format!("/tenants/{noisy}/members/{victim}");
    let far = authz_core::clock::now_seconds() + 365 * 24 * 3600;
    let loop_writes = async {
        let (mut accepted, mut limited, mut k) = (0usize, 0usize, 0u64);
        while Instant::now() < end {
            k += 1;
            let body = json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(far - k)});
            let answer = admin
                .api
                .call(
                    "PUT",
                    &victim_member,
                    Some(&mallory_token),
                    Some(&body),
                    None,
                )
                .await?;
            match answer.status {
                200 | 201 => accepted += 1,
                429 if answer.retry_after.is_some_and(|s| s >= 1) => limited += 1,
                other => {
                    return Err(format!(
                        "the storm's write answered {other} {}",
                        answer.body
                    ))
                }
            }
        }
        Ok::<_, String>((accepted, limited))
    };
    let bystander = async {
        let mut requests = 0usize;
        while Instant::now() < end {
            let answer = admin
                .api
                .call("GET", &read, Some(&bea_token), None, None)
                .await?;
            if answer.status != 200 {
                return Err(format!(
                    "the quiet tenant's member was answered {}",
                    answer.status
                ));
            }
            requests += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok::<_, String>(requests)
    };
    let suspension = async {
        tokio::time::sleep(lasted / 2).await;
        admin
            .expect(
                "PATCH",
                &format!("/users/{ben}"),
                Some(json!({"status": "suspended"})),
                None,
            )
            .await?;
        let suspended = Instant::now();
        loop {
            let answer = admin
                .api
                .call("GET", &read, Some(&ben_token), None, None)
                .await?;
            match answer.status {
                401 | 403 => return Ok::<_, String>(suspended.elapsed()),
                _ if suspended.elapsed() > GIVE_UP => {
                    return Err("the suspended member was let through".into())
                }
                _ => tokio::time::sleep(POLL).await,
            }
        }
    };
    let (writes, bystander, suspended) = tokio::join!(loop_writes, bystander, suspension);
    let (accepted, limited) = writes?;
    Ok(Storm {
        lasted: started.elapsed(),
        accepted,
        limited,
        flushes: flushes() - flushes_before,
        bystander_requests: bystander?,
        standing_reads: standing_reads() - reads_before,
        bystander_authorizer_calls: authorizer_calls_with(&bea_token) - bystander_calls_before,
        suspended_refused_after: suspended?,
    })
}
