//! The authorizer's two TLS clients, DynamoDB's (the SDK's) and the
//! issuer's JWKS, trust the roots `SSL_CERT_FILE` names and no others: a
//! first decision made over TLS to both, each behind a private CA, and each
//! client refusing those servers when it trusts the platform's roots. One
//! test in its own process: it sets the environment the roots are read from.

mod common;

use std::time::Duration;

use aws_sdk_dynamodb::config::{AppName, BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;

use authorizer::jwks::{HttpJwks, JwksSource};
use authz_core::runtime::tls::TrustRoots;
use authz_core::Store;
use common::*;
use testkit::tls::TlsFront;

const MEMBERS: &str = "/tenants/{tenantId}/members";

#[tokio::test]
async fn a_decision_over_tls_trusts_ssl_cert_file_and_nothing_else() {
    let world = World::new(Duration::ZERO, None).await;
    let tenant = world.tenant("acme").await;
    let reader = world.role("tenant", "reader", &["member:read"]).await;
    let user = world.user("member@example.com", &[]).await;
    world.grant(tenant, user, &[reader]).await;

    // DynamoDB (through the authorizer's IAM proxy) and the JWKS, each
    // behind TLS with a CA of its own; the bundle holds both CAs.
    let dynamodb = TlsFront::start(&testkit::proxy().endpoint).await;
    let jwks_addr = world
        .jwks
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let issuer = TlsFront::start(&jwks_addr).await;
    let jwks_url = format!("{}/.well-known/jwks.json", issuer.origin);
    let bundle = std::env::temp_dir().join(format!("authz-ca-{}.pem", ulid::Ulid::new()));
    std::fs::write(&bundle, format!("{}{}", dynamodb.ca_pem, issuer.ca_pem)).unwrap();

    // The process environment as Lambda gives it, plus the bundle.
    for (k, v) in [
        ("SSL_CERT_FILE", bundle.display().to_string()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "local".into()),
        ("AWS_SECRET_ACCESS_KEY", "local".into()),
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.origin.clone()),
        // The function's name, by which the IAM proxy knows its policy.
        ("AWS_SDK_UA_APP_ID", "authorizer".into()),
    ] {
        std::env::set_var(k, v);
    }
    assert_eq!(
        authz_core::runtime::tls::check(|k| std::env::var(k).ok()),
        Ok(())
    );
    let sdk = authz_core::runtime::aws::sdk_config().await;
    let store = Store::new(
        authz_core::runtime::aws::dynamodb_client(&sdk),
        world.table.name.clone(),
    );
    let authorizer = authorizer_at(&jwks_url, store, Duration::ZERO, None);
    let event = rest_event(
        "GET",
        MEMBERS,
        &params_for(MEMBERS, tenant),
        Some(&format!("Bearer {}", token(&user.to_string()))),
    );
    let answer: Value = authorizer::handler::handle_value(&authorizer, &event)
        .await
        .expect("a decision over TLS");
    assert_eq!(answer["policyDocument"]["Statement"][0]["Effect"], "Allow");
    assert_eq!(answer["context"]["userId"], user.to_string());
    assert_eq!(world.jwks.fetches(), 1);

    // The platform's roots vouch for neither server.
    let platform: &'static TrustRoots =
        Box::leak(Box::new(TrustRoots::from_lookup(|_| None).unwrap()));
    let refused = HttpJwks::new(&jwks_url)
        .unwrap()
        .trusting(platform)
        .fetch()
        .await
        .unwrap_err();
    assert!(refused.0.contains("certificate"), "{refused}");
    assert_eq!(world.jwks.fetches(), 1, "no request got through");
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "test"))
        .endpoint_url(&dynamodb.origin)
        // The authorizer's identity, under its policy, had it got through.
        .app_name(AppName::new("authorizer").unwrap())
        .http_client(platform.sdk_http_client())
        .build();
    let read = aws_sdk_dynamodb::Client::from_conf(config)
        .get_item()
        .table_name(&world.table.name)
        .key("PK", AttributeValue::S("GLOBAL".into()))
        .key("SK", AttributeValue::S("none".into()))
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(read, SdkError::DispatchFailure(_)),
        "refused before any request: {read:?}"
    );
    assert!(format!("{read:?}").contains("UnknownIssuer"), "{read:?}");
    std::fs::remove_file(&bundle).unwrap();
}
