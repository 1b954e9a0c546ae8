//! What every Lambda function needs around its logic: configuration read
//! once at start-up, the trust roots of its TLS connections, its JSON logs
//! and its CloudWatch metrics. Uses nothing of the crate but `error` (and
//! `store` to build one at start-up).

pub mod config;
pub mod logging;
pub mod metrics;
pub mod tls;
