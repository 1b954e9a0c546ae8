//! Local development tools, never deployed: the whole system on one machine
//! without Docker (`make demo`, `make dev`).
//!
//! - `gateway`: API Gateway's REST API for `template.yaml` (authorizer
//!   events, result cache, IAM policy evaluation, proxy events).
//! - `lambda`: a client of the Lambda Invoke API (`cargo lambda watch`).
//! - `stream` and `poller`: the DynamoDB Streams event source mapping.
//! - `oidc`: the local OpenID provider (npm `oidc-provider`) and scripted
//!   sign-ins against it.
//! - `stack`: starts and stops all of it; `scenario`: the scripted demo;
//!   `local`: the `authz-local` commands; `revocation`: how long a revoked
//!   member keeps access through every cache.
//! - `iam_check`: the policy mutation check `make test` runs after the suite.

pub mod gateway;
pub mod iam_check;
pub mod lambda;
pub mod local;
pub mod oidc;
pub mod poller;
pub mod revocation;
pub mod scenario;
pub mod scim_replay;
pub mod stack;
pub mod stream;
