//! What the benchmarks decide about: a table on DynamoDB Local with a
//! tenant, a tenant role, a user and the user's grant; tokens signed with
//! the authorizer tests' RSA key; REQUEST authorizer events for it.

use std::time::Duration;

use authz_core::model::values::{RoleId, TenantId, UserId};
use authz_core::testing::{new_role, new_tenant, new_user};
use authz_core::Store;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use testkit::TestTable;

pub const ISSUER: &str = "https://issuer.bench";
pub const AUDIENCE: &str = "authz-api";
/// The authorizer tests' key set (RSA `key-a`, ...).
pub const JWKS: &str = include_str!("../../authorizer/tests/keys/jwks.json");
const RSA_A: &[u8] = include_bytes!("../../authorizer/tests/keys/rsa-a.pem");
/// The shipped route rules.
pub const ROUTES: &str = include_str!("../../../route_rules/provisioning.json");
pub const ROUTES_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../route_rules/provisioning.json"
);

/// The distinct permissions of the shipped route rules (the Cedar
/// schema's actions), sorted.
pub fn route_rule_permissions() -> Vec<String> {
    let rules = authz_core::policy::route_rules::parse(ROUTES).expect("the shipped rules");
    let permissions: std::collections::BTreeSet<String> =
        rules.iter().map(|r| r.permission.to_string()).collect();
    permissions.into_iter().collect()
}

const REST_EVENT: &str = include_str!("../../../events/authorizer-rest-request.json");
/// The tenant route the benchmarks decide (`member:read`).
pub const RESOURCE: &str = "/tenants/{tenantId}/members";

/// An RS256 token for `user`, valid for an hour.
/// The subject the bench user's identity has at [`ISSUER`], for issuers
/// that name users by identity.
pub const SUBJECT: &str = "bench|dana";

/// A valid token for `user` (its id in `sub`), signed by `key-a`.
pub fn token(user: &UserId) -> String {
    token_for(&user.to_string())
}

/// A valid token whose `sub` is `subject`, signed by `key-a`.
pub fn token_for(subject: &str) -> String {
    let now = authz_core::clock::now_seconds();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("key-a".into());
    let claims =
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 3600});
    encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(RSA_A).expect("the test key"),
    )
    .expect("signs")
}

/// A REST REQUEST authorizer event for `GET /tenants/{tenant}/members`.
pub fn rest_event(tenant: &TenantId, token: &str) -> Value {
    let mut event: Value = serde_json::from_str(REST_EVENT).expect("the sample event");
    let path = format!("/tenants/{tenant}/members");
    event["path"] = json!(path);
    event["resource"] = json!(RESOURCE);
    event["pathParameters"] = json!({"tenantId": tenant.to_string()});
    event["methodArn"] = json!(format!(
        "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET{path}"
    ));
    event["headers"]["Authorization"] = json!(format!("Bearer {token}"));
    event["multiValueHeaders"]["Authorization"] = json!([format!("Bearer {token}")]);
    event
}

/// A table with one member of one tenant.
pub struct World {
    pub table: TestTable,
    pub store: Store,
    pub tenant: TenantId,
    pub role: RoleId,
    pub user: UserId,
}

impl World {
    pub async fn new() -> Self {
        let table = TestTable::create().await;
        let store = Store::new(table.client.clone(), table.name.clone());
        let tenant = store
            .create_tenant(&new_tenant("acme"), None)
            .await
            .expect("tenant")
            .tenant_id;
        let role = store
            .create_role(
                &new_role("tenant", "member-viewer", &["tenant:read", "member:read"]),
                &authz_core::Caller::OPERATOR,
            )
            .await
            .expect("role")
            .role_id;
        let user = store
            .create_user(
                &new_user("dana@example.com", &[]),
                &authz_core::Caller::OPERATOR,
            )
            .await
            .expect("user")
            .user_id;
        store
            .put_tenant_grant(&tenant, &user, &[role], &authz_core::Caller::OPERATOR)
            .await
            .expect("grant");
        // Its identity at the issuer, for issuers that name users by one.
        let identity = authz_core::model::input::NewIdentity {
            issuer: authz_core::model::values::Issuer::parse(ISSUER).expect("issuer"),
            subject: authz_core::model::values::Subject::parse(SUBJECT).expect("subject"),
        };
        store
            .link_identity(&user, &identity, &authz_core::Caller::OPERATOR)
            .await
            .expect("identity");
        // As `make bootstrap` leaves a deployment: the policy set counted.
        store.count_policies().await.expect("policy counts");
        Self {
            table,
            store,
            tenant,
            role,
            user,
        }
    }
}

/// The authorizer as the binary builds it, over `store`, with the test
/// key set preloaded (`JWKS_JSON`) and the shipped route rules.
pub fn authorizer(
    store: Store,
    cache_ttl: Duration,
) -> authorizer::Authorizer<authorizer::jwks::HttpJwks> {
    use authorizer::jwks::{HttpJwks, KeyStore};
    use authorizer::token::{Expectations, Verifier};
    let source = HttpJwks::new("http://127.0.0.1:9/jwks.json").expect("a URL");
    let keys = KeyStore::new(source, Some(JWKS)).expect("the key set");
    let verifier = Verifier::new(
        keys,
        Expectations {
            issuer: ISSUER.into(),
            audiences: vec![AUDIENCE.into()],
            user_id_claim: "sub".into(),
        },
    );
    let rules = authorizer::routes::RouteRules::parse(ROUTES).expect("the shipped rules");
    authorizer::Authorizer::new(verifier, rules, store, cache_ttl)
}

/// [`authorizer`], for an issuer that names users by identity (`sub` is
/// looked up among the identities linked to users).
pub fn identity_authorizer(
    store: Store,
    cache_ttl: Duration,
) -> authorizer::Authorizer<authorizer::jwks::HttpJwks> {
    use authorizer::jwks::{HttpJwks, KeyStore};
    use authorizer::token::{TrustedIssuer, Verifier};
    let list = json!([{"issuer": ISSUER, "audiences": [AUDIENCE], "tokenUse": "any", "jwksUrl": "http://127.0.0.1:9/jwks.json"}]);
    let profile = authorizer::issuers::parse(&list.to_string())
        .expect("the issuer")
        .remove(0);
    let source = HttpJwks::for_issuer(&profile).expect("a URL");
    let keys = KeyStore::new(source, Some(JWKS)).expect("the key set");
    let verifier = Verifier::with_issuers(vec![TrustedIssuer { profile, keys }]);
    let rules = authorizer::routes::RouteRules::parse(ROUTES).expect("the shipped rules");
    authorizer::Authorizer::new(verifier, rules, store, cache_ttl)
}
