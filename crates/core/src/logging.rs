//! JSON logs for the functions: one line per event, to stdout, where Lambda
//! sends them to CloudWatch. The level comes from `RUST_LOG` (default `info`).

/// Installs the JSON subscriber once per process.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Lambda adds its own timestamp to every line; the target is noise.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_target(false)
        .without_time()
        .with_current_span(false)
        .try_init();
}
