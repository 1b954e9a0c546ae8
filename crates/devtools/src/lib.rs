//! Local development tools, never deployed.
//!
//! `stream`: reads DynamoDB Local's stream through the DynamoDB Streams API
//! at the same endpoint and hands records to the recompute handler in
//! Lambda's event shape, the way the event source mapping does in AWS.

pub mod stream;
