//! What every Lambda function needs around its logic: configuration read
//! once at start-up, the trust roots of its TLS connections, its JSON logs,
//! its CloudWatch metrics, and the AWS SDK built once. Uses nothing of the
//! crate but `error`.

pub mod aws;
pub mod config;
pub mod logging;
pub mod metrics;
pub mod tls;
