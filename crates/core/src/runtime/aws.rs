//! The AWS SDK as every function builds it once at start-up: the SDK's
//! standard configuration with the process's trust roots, credentials
//! straight from the environment when it holds them, and a DynamoDB client
//! whose requests are counted.

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_sdk_dynamodb::config::ProvideCredentials;

use crate::runtime::metrics::CountRequests;
use crate::runtime::tls::TrustRoots;

/// The functions' SDK configuration: the SDK's standard chain (region,
/// credentials, `AWS_ENDPOINT_URL_DYNAMODB`, retry settings) with an HTTPS
/// client trusting [`TrustRoots::global`].
///
/// When the environment holds credentials, as Lambda's always does (the
/// function role's session), they are taken from it directly: the standard
/// chain tries the environment first and would choose the same ones, but
/// building the chain's other providers (profile files, SSO, web identity
/// with its STS endpoint rules, the container and instance metadata
/// clients) costs a cold start about 1.5 ms of CPU (`make bench`).
pub async fn sdk_config() -> aws_config::SdkConfig {
    let loader = aws_config::from_env().http_client(TrustRoots::global().sdk_http_client());
    let environment = EnvironmentVariableCredentialsProvider::new();
    // Asking the provider itself (it reads variables, no I/O) keeps its
    // rule, blank values and fallback names included, in one place.
    let loader = if environment.provide_credentials().await.is_ok() {
        loader.credentials_provider(environment)
    } else {
        loader
    };
    loader.load().await
}

/// The functions' DynamoDB client: the SDK's configuration with its requests
/// counted.
pub fn dynamodb_client(sdk: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .interceptor(CountRequests)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}
