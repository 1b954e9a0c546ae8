//! The request sequences Okta and Entra ID send a SCIM service provider,
//! as their documentation writes them, replayed through the local stack
//! (its gateway, the authorizer deciding the directory's token, the
//! provisioning function): create, look up, rename, deactivate,
//! reactivate, group membership added and removed, delete. After each
//! step the platform admin reads what it left: the person, the member's
//! grant in the tenant, the roles a mapped group gives.

use serde_json::{json, Value};

use crate::scenario::{Answer, ApiClient};

/// The platform admin's side (a token holding everything) and the API.
pub struct Replay<'a> {
    pub api: &'a ApiClient,
    pub admin_token: &'a str,
}

const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

impl Replay<'_> {
    async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let answer = self
            .api
            .call(method, path, Some(self.admin_token), body.as_ref(), None)
            .await?;
        ok(method, path, answer)
    }

    /// A tenant with a directory token, a role and a member whose verified
    /// address the directory will assert: (tenant, secret, role, user).
    async fn setup(
        &self,
        tag: &str,
        email: &str,
    ) -> Result<(String, String, String, String), String> {
        let tenant = self
            .admin(
                "POST",
                "/tenants",
                Some(json!({"name": format!("replay-{tag}")})),
            )
            .await?["tenantId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let secret = self
            .admin(
                "POST",
                &format!("/tenants/{tenant}/scim-tokens"),
                Some(json!({"name": tag})),
            )
            .await?["token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let role = self
            .admin(
                "POST",
                "/roles",
                Some(json!({"name": format!("agents-{tag}"), "scope": "tenant", "permissions": ["tenant:read"]})),
            )
            .await?["roleId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let user = self
            .admin("POST", "/users", Some(json!({"email": email})))
            .await?["userId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let addresses = self
            .admin("GET", &format!("/users/{user}/emails"), None)
            .await?;
        let email_id = addresses["items"][0]["emailId"]
            .as_str()
            .unwrap_or_default();
        self.admin(
            "POST",
            &format!("/users/{user}/emails/{email_id}/verify"),
            Some(json!({"verified": true})),
        )
        .await?;
        self.admin(
            "PUT",
            &format!("/tenants/{tenant}/members/{user}"),
            Some(json!({"roles": []})),
        )
        .await?;
        Ok((tenant, secret, role, user))
    }

    async fn scim(
        &self,
        secret: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let answer = self
            .api
            .call(method, path, Some(secret), body.as_ref(), None)
            .await?;
        ok(method, path, answer)
    }

    /// The member's roles in the tenant; `None` when they are no member.
    async fn roles(&self, tenant: &str, user: &str) -> Result<Option<Vec<String>>, String> {
        let path = format!("/tenants/{tenant}/members/{user}");
        let answer = self
            .api
            .call("GET", &path, Some(self.admin_token), None, None)
            .await?;
        match answer.status {
            404 => Ok(None),
            200 => Ok(Some(
                answer.body["roles"]
                    .as_array()
                    .map(|r| {
                        r.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
            )),
            other => Err(format!("GET {path}: {other} {}", answer.body)),
        }
    }

    async fn map(&self, tenant: &str, group: &str, role: &str) -> Result<(), String> {
        self.admin(
            "PUT",
            &format!("/tenants/{tenant}/scim-groups/{group}/roles"),
            Some(json!({"roles": [role]})),
        )
        .await
        .map(drop)
    }

    /// Okta's sequence (its SCIM 2.0 provisioning guide): look up by
    /// userName with paging, create, read, update the profile with PUT,
    /// deactivate and reactivate with pathless replaces, push a group and
    /// change its members (add, remove by value filter, a full replace,
    /// an empty one), and (Okta never deletes) deactivate again.
    pub async fn okta(&self, tag: &str) -> Result<(), String> {
        let email = format!("okta-{tag}@example.com");
        let (tenant, secret, role, user) = self.setup(&format!("okta-{tag}"), &email).await?;
        let base = format!("/scim/v2/{tenant}");
        let filter = format!("userName%20eq%20%22{}%22", email.replace('@', "%40"));
        let found = self
            .scim(
                &secret,
                "GET",
                &format!("{base}/Users?filter={filter}&startIndex=1&count=100"),
                None,
            )
            .await?;
        expect(found["totalResults"] == 0, "Okta's lookup finds nobody yet")?;
        let created = self
            .scim(
                &secret,
                "POST",
                &format!("{base}/Users"),
                Some(json!({
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                    "userName": email,
                    "name": {"givenName": "Okta", "familyName": "Person"},
                    "emails": [{"primary": true, "value": email, "type": "work"}],
                    "displayName": "Okta Person",
                    "locale": "en-US",
                    "externalId": format!("00u{tag}"),
                    "groups": [],
                    "password": "t1meMa$heen",
                    "active": true
                })),
            )
            .await?;
        let id = created["id"].as_str().unwrap_or_default().to_string();
        let person = format!("{base}/Users/{id}");
        let mut read = self.scim(&secret, "GET", &person, None).await?;
        read["name"]["familyName"] = json!("Renamed");
        let put = self.scim(&secret, "PUT", &person, Some(read)).await?;
        expect(put["name"]["familyName"] == "Renamed", "Okta's PUT renames")?;
        let active = |on: bool| json!({"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"active": on}}]});
        self.scim(&secret, "PATCH", &person, Some(active(false)))
            .await?;
        expect(
            self.roles(&tenant, &user).await?.is_none(),
            "Okta's deactivation suspends the member",
        )?;
        self.scim(&secret, "PATCH", &person, Some(active(true)))
            .await?;
        expect(
            self.roles(&tenant, &user).await?.is_some(),
            "Okta's reactivation gives the membership back",
        )?;

        let group = self
            .scim(
                &secret,
                "POST",
                &format!("{base}/Groups"),
                Some(json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": format!("Okta {tag}"), "members": []})),
            )
            .await?;
        let group_id = group["id"].as_str().unwrap_or_default().to_string();
        self.map(&tenant, &group_id, &role).await?;
        let members = format!("{base}/Groups/{group_id}");
        self.scim(
            &secret,
            "PATCH",
            &members,
            Some(json!({"schemas": [PATCH_OP], "Operations": [{"op": "add", "path": "members", "value": [{"value": id, "display": email}]}]})),
        )
        .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![role.clone()]),
            "Okta's group push gives the mapped role",
        )?;
        self.scim(
            &secret,
            "PATCH",
            &members,
            Some(json!({"schemas": [PATCH_OP], "Operations": [{"op": "remove", "path": format!("members[value eq \"{id}\"]")}]})),
        )
        .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![]),
            "Okta's member removal takes the role back",
        )?;
        // Okta's other way: the whole member list replaced, with the
        // group's name re-sent as it is with every membership change.
        let replace = |list: Value| {
            json!({"schemas": [PATCH_OP], "Operations": [
                {"op": "replace", "value": {"id": group_id, "displayName": format!("Okta {tag}")}},
                {"op": "replace", "path": "members", "value": list}
            ]})
        };
        self.scim(
            &secret,
            "PATCH",
            &members,
            Some(replace(json!([{"value": id, "display": email}]))),
        )
        .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![role.clone()]),
            "Okta's full replace of the members gives the role",
        )?;
        self.scim(&secret, "PATCH", &members, Some(replace(json!([]))))
            .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![]),
            "Okta's empty replace takes everyone out",
        )?;
        self.scim(&secret, "PATCH", &person, Some(active(false)))
            .await?;
        expect(
            self.roles(&tenant, &user).await?.is_none(),
            "deactivated again",
        )?;
        let still = self.scim(&secret, "GET", &person, None).await?;
        expect(
            still["active"] == false,
            "a deactivated person stays readable",
        )
    }

    /// Entra ID's sequence (its SCIM guide, default behaviour): its
    /// connection test (a user and a group nobody has), look up by
    /// externalId, create, rename with capitalised ops and a pathless
    /// Replace of dotted keys, look the group up by name without members,
    /// create it, add and remove (by listing) its member, rename and
    /// delete it, soft-delete with a string boolean, restore with "True",
    /// soft-delete again, delete.
    pub async fn entra(&self, tag: &str) -> Result<(), String> {
        let email = format!("entra-{tag}@example.com");
        let (tenant, secret, role, user) = self.setup(&format!("entra-{tag}"), &email).await?;
        let base = format!("/scim/v2/{tenant}");
        let object_id = format!("58342554-38d6-4ec8-948c-{tag}");
        // Its first call, the connection test: a user and a group nobody
        // has, each a 200 list of none.
        for probe in [
            format!("{base}/Users?filter=userName+eq+%22non-existent+user+{tag}%22"),
            format!("{base}/Groups?excludedAttributes=members&filter=displayName+eq+%22non-existent+group+{tag}%22"),
        ] {
            let none = self.scim(&secret, "GET", &probe, None).await?;
            expect(none["totalResults"] == 0, "Entra's connection test finds nobody")?;
        }
        let found = self
            .scim(
                &secret,
                "GET",
                &format!("{base}/Users?filter=externalId+eq+%22{object_id}%22"),
                None,
            )
            .await?;
        expect(
            found["totalResults"] == 0,
            "Entra's lookup finds nobody yet",
        )?;
        let created = self
            .scim(
                &secret,
                "POST",
                &format!("{base}/Users"),
                Some(json!({
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
                    "externalId": object_id,
                    "userName": email,
                    "active": true,
                    "emails": [{"primary": true, "type": "work", "value": email}],
                    "meta": {"resourceType": "User"},
                    "name": {"formatted": "Entra Person", "familyName": "Person", "givenName": "Entra"},
                    "roles": []
                })),
            )
            .await?;
        let id = created["id"].as_str().unwrap_or_default().to_string();
        let person = format!("{base}/Users/{id}");
        let renamed = self
            .scim(
                &secret,
                "PATCH",
                &person,
                Some(json!({"schemas": [PATCH_OP], "Operations": [
                    {"op": "Replace", "path": "displayName", "value": "Entra Renamed"},
                    {"op": "Replace", "value": {"name.givenName": "Entrée"}}
                ]})),
            )
            .await?;
        expect(
            renamed["name"]["givenName"] == "Entrée",
            "Entra's dotted-key replace renames",
        )?;

        let name = format!("Sales {tag}");
        let lookup = self
            .scim(
                &secret,
                "GET",
                &format!(
                    "{base}/Groups?excludedAttributes=members&filter=displayName+eq+%22{}%22",
                    name.replace(' ', "+")
                ),
                None,
            )
            .await?;
        expect(
            lookup["totalResults"] == 0,
            "Entra's group lookup finds none yet",
        )?;
        let group = self
            .scim(
                &secret,
                "POST",
                &format!("{base}/Groups"),
                Some(json!({"externalId": format!("8aa1a0c0-{tag}"), "displayName": name, "meta": {"resourceType": "Group"}, "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"]})),
            )
            .await?;
        let group_id = group["id"].as_str().unwrap_or_default().to_string();
        self.map(&tenant, &group_id, &role).await?;
        let members = format!("{base}/Groups/{group_id}");
        let change = |op: &str| json!({"schemas": [PATCH_OP], "Operations": [{"op": op, "path": "members", "value": [{"value": id}]}]});
        self.scim(&secret, "PATCH", &members, Some(change("Add")))
            .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![role.clone()]),
            "Entra's member add gives the mapped role",
        )?;
        self.scim(&secret, "PATCH", &members, Some(change("Remove")))
            .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![]),
            "Entra's listed removal takes it back",
        )?;
        // The group renamed (one Replace of displayName), then deleted.
        let renamed_group = self
            .scim(
                &secret,
                "PATCH",
                &members,
                Some(json!({"schemas": [PATCH_OP], "Operations": [{"op": "Replace", "path": "displayName", "value": format!("Sales renamed {tag}")}]})),
            )
            .await?;
        expect(
            renamed_group["displayName"] == format!("Sales renamed {tag}"),
            "Entra's group rename",
        )?;
        let dropped = self
            .api
            .call("DELETE", &members, Some(&secret), None, None)
            .await?;
        expect(dropped.status == 204, "Entra's group delete answers 204")?;

        self.scim(
            &secret,
            "PATCH",
            &person,
            Some(json!({"schemas": [PATCH_OP], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]})),
        )
        .await?;
        expect(
            self.roles(&tenant, &user).await?.is_none(),
            "Entra's soft delete suspends the member",
        )?;
        let active = |on: &str| json!({"schemas": [PATCH_OP], "Operations": [{"op": "Replace", "path": "active", "value": on}]});
        self.scim(&secret, "PATCH", &person, Some(active("True")))
            .await?;
        expect(
            self.roles(&tenant, &user).await? == Some(vec![]),
            "Entra's restore (\"True\") gives the membership back",
        )?;
        self.scim(&secret, "PATCH", &person, Some(active("False")))
            .await?;
        expect(
            self.roles(&tenant, &user).await?.is_none(),
            "and its soft delete again suspends it",
        )?;
        let deleted = self
            .api
            .call("DELETE", &person, Some(&secret), None, None)
            .await?;
        expect(deleted.status == 204, "Entra's delete answers 204")?;
        let gone = self
            .api
            .call("GET", &person, Some(&secret), None, None)
            .await?;
        expect(gone.status == 404, "the deleted person is gone")?;
        // Ended for good: a late restore finds nobody and gives nothing.
        let late = self
            .api
            .call("PATCH", &person, Some(&secret), Some(&active("True")), None)
            .await?;
        expect(late.status == 404, "a restore after the delete is a 404")?;
        expect(
            self.roles(&tenant, &user).await?.is_none(),
            "Entra's delete leaves no membership",
        )?;
        let account = self.admin("GET", &format!("/users/{user}"), None).await?;
        expect(account["status"] == "active", "the platform's user stands")
    }
}

fn ok(method: &str, path: &str, answer: Answer) -> Result<Value, String> {
    if (200..300).contains(&answer.status) {
        Ok(answer.body)
    } else {
        Err(format!(
            "{method} {path}: {} {}",
            answer.status, answer.body
        ))
    }
}

fn expect(condition: bool, what: &str) -> Result<(), String> {
    if condition {
        Ok(())
    } else {
        Err(format!("expected: {what}"))
    }
}
